"""A block's token count from its pieces' counts is the count of the whole block."""

from __future__ import annotations

import string
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kioku._context_build.tokens import MemoCounter, TiktokenCounter, count_block

COUNTER = TiktokenCounter()

CHUNKS = st.sampled_from(
    [
        *string.ascii_letters,
        *string.digits,
        *string.punctuation,
        *" \t\n\r\u00a0\u2028\u3000\x0b\x1c",
        "é",
        "日本",
        "😀",
        "'s",
        "'ll",
        "ID:12",
        "<|endoftext|>",
        "\n\n",
        "...",
        "—",
        "123456",
        " (2026-11-24, today) ",
        "- Memories: ",
    ]
)
TEXT = st.lists(CHUNKS, max_size=25).map("".join)
LINES = st.lists(st.lists(TEXT, min_size=1, max_size=4), min_size=1, max_size=6)


def whole(text: str) -> int:
    return len(COUNTER.encoding.encode(text, disallowed_special=()))


@settings(max_examples=3000, deadline=None, suppress_health_check=list(HealthCheck))
@given(LINES)
def test_the_pieces_add_up_to_the_whole_for_any_text(lines: list[list[str]]) -> None:
    text, tokens = count_block(lines, COUNTER)
    assert text == "\n".join("; ".join(segments) for segments in lines)
    assert tokens == whole(text)


@settings(max_examples=1000, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.lists(
        st.lists(TEXT.map(lambda t: "ID:" + t), min_size=1, max_size=5), min_size=1, max_size=5
    )
)
def test_memory_lines_are_counted_by_pieces_and_still_add_up(lines: list[list[str]]) -> None:
    text, tokens = count_block(lines, MemoCounter(COUNTER))
    assert tokens == whole(text)


class Encoding:
    """cl100k, remembering what it was asked to encode."""

    def __init__(self) -> None:
        self.encoded: list[str] = []

    def encode(self, text: str, **options: Any) -> list[int]:
        self.encoded.append(text)
        return list(COUNTER.encoding.encode(text, **options))


def test_one_changed_memory_costs_its_piece_not_the_block() -> None:
    counter, encoding = TiktokenCounter(), Encoding()
    counter._encoding = encoding
    memories = [f"ID:{i} (today) Alice likes tea number {i}." for i in range(40)]
    block = [["## Participants"], ["Alice"], ["- Memories: " + memories[0], *memories[1:]]]
    assert count_block(block, MemoCounter(counter))[1] == whole(count_block(block, len)[0])
    memories[7] = "ID:7 (today) Alice now prefers coffee."
    block[2] = ["- Memories: " + memories[0], *memories[1:]]
    encoding.encoded.clear()
    text, tokens = count_block(block, MemoCounter(counter))
    assert tokens == whole(text)
    assert encoding.encoded == [" ID:7 (today) Alice now prefers coffee.;"]
    encoding.encoded.clear()
    assert count_block(block, counter)[1] == tokens and not encoding.encoded  # cached whole


def test_another_counter_counts_the_block_whole() -> None:
    text, tokens = count_block([["a", "b"], ["c"]], len)
    assert (text, tokens) == ("a; b\nc", 6)
