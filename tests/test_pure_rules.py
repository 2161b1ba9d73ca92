"""Pure rules: sanitising, names, argument parsing, resolution and rendering."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from kioku import Participant, PrivacyLevel
from kioku._context_build.loader import wanted
from kioku._domain.records import MemoryRecord
from kioku._memory.arguments import ArgumentError, parse_memory_id
from kioku._memory.rendering import render_personal_memories, render_server_memories
from kioku._memory.resolution import (
    Ambiguous,
    DirectoryMember,
    NotFound,
    Resolved,
    match_directory,
    match_participants,
)
from kioku._memory.text import normalise_name, sanitise_content
from kioku._search.planning import came_back_short, choose_vector_plan, indexed_rows


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("  {user} likes tea ", "{user} likes tea"),
        ("{USER} and {Bot} and {char}", "{user} and {bot} and {char}"),
        ("{bredrumb} {{thing}} { spaced }", "bredrumb thing spaced"),
        ("{{user}}", "{user}"),
        ("{} and {1 2}", "{} and {1 2}"),
        ("tab\tnew\nline\x00bell\x07", "tab\tnew\nlinebell"),
    ],
)
def test_sanitise(raw: str, clean: str) -> None:
    assert sanitise_content(raw) == clean


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        ("  @Alice  ", "alice"),
        ("Ａｌｉｃｅ", "alice"),
        ("Mary   Jane", "mary jane"),
        ("@@x", "@x"),
        ("STRASSE", "strasse"),
    ],
)
def test_normalise_name(raw: str, key: str) -> None:
    assert normalise_name(raw) == key


@pytest.mark.parametrize(
    ("value", "expected"), [(7, 7), ("7", 7), ("ID:7", 7), ("id: 7", 7), ("#7", None), (7.0, 7)]
)
def test_parse_memory_id(value: object, expected: int | None) -> None:
    if expected is None:
        with pytest.raises(ArgumentError):
            parse_memory_id(value)
    else:
        assert parse_memory_id(value) == expected


ALICE = Participant("a", "Alice", ("ali",))
ALICE2 = Participant("a2", "Alicia", ("ali",))
BOB = Participant("b", "Bob", privacy=PrivacyLevel.PARTIAL)


def test_label_match_beats_alias_match() -> None:
    other = Participant("x", "Someone", ("alice",))
    found = match_participants("alice", [ALICE, other], "bot")
    assert isinstance(found, Resolved) and found.person.user_id == "a"


def test_alias_matches_can_be_ambiguous() -> None:
    found = match_participants("ali", [ALICE, ALICE2], "bot")
    assert isinstance(found, Ambiguous) and found.candidates == ("Alice", "Alicia")


def test_duplicates_of_one_user_are_one_match() -> None:
    assert isinstance(match_participants("alice", [ALICE, ALICE], "bot"), Resolved)


def test_candidates_are_capped_at_three() -> None:
    many = [Participant(str(i), "Sam") for i in range(5)]
    found = match_participants("sam", many, "bot")
    assert isinstance(found, Ambiguous) and len(found.candidates) == 3


def test_directory_stages_in_order() -> None:
    members = [
        DirectoryMember("1", "Kit", nickname="k"),
        DirectoryMember("2", "Other", nickname="kit"),
        DirectoryMember("3", "Third", global_name="k"),
    ]
    found = match_directory("kit", members, "bot")
    assert isinstance(found, Resolved) and found.person.user_id == "1"
    found = match_directory("k", members, "bot")
    assert (
        isinstance(found, Resolved) and found.person.user_id == "1"
    )  # nickname stage before global
    assert isinstance(match_directory("nobody", members, "bot"), NotFound)
    dupes = [DirectoryMember("1", "A", username="u"), DirectoryMember("2", "B", username="u")]
    assert isinstance(match_directory("u", dupes, "bot"), Ambiguous)


def _record(memory_id: int, content: str) -> MemoryRecord:
    now = datetime.now(UTC)
    return MemoryRecord(memory_id, "server", "s", None, 10000, content, now, now, None, now)


def test_render_blocks() -> None:
    memories = [_record(9, "{bot} likes {user}"), _record(3, "old")]
    assert render_server_memories(memories, bot_name="Kioku", server_name="Tea", is_dm=False) == (
        "## Kioku's Memories about Tea\nID:9 Kioku likes User\nID:3 old"
    )
    assert render_server_memories([], bot_name="Kioku", server_name=None, is_dm=True) == (
        "## Kioku's Memories about this conversation with User"
    )
    assert render_personal_memories(memories, owner_name="Alice", bot_name="Kioku") == (
        "- Memories: ID:9 Kioku likes Alice; ID:3 old"
    )


def test_vector_plan_exact_for_small_rare_or_unknown_scopes() -> None:
    assert choose_vector_plan(2_000, 1_000_000, 200, exact_max_rows=2_000) == "exact"
    assert choose_vector_plan(10_000, None, 200, exact_max_rows=2_000) == "exact"
    # 1% of ten million rows: the filtered index scan would give up before filling the pool
    assert choose_vector_plan(50_000, 10_000_000, 200, exact_max_rows=2_000) == "exact"
    assert choose_vector_plan(10_000, 10_000_000, 200, exact_max_rows=2_000) == "exact"
    # 5% of 105,000 rows, pool 20: the walk still gathers ef_search (100) candidates,
    # about 2,100 visits, more than a quarter of the 5,000 rows a scan reads
    assert choose_vector_plan(5_000, 105_000, 20, exact_max_rows=2_000) == "exact"


def test_vector_plan_index_for_large_common_scopes() -> None:
    assert choose_vector_plan(10_000, 10_500, 200, exact_max_rows=2_000) == "hnsw"
    assert choose_vector_plan(100_000, 1_000_000, 200, exact_max_rows=2_000) == "hnsw"
    assert choose_vector_plan(5, 5, 200, exact_max_rows=0) == "hnsw"  # 0: always the index


def test_a_walk_is_sized_by_its_own_kinds_index() -> None:
    """A server of 10,000 among 110,000 server-wide memories and a million personal ones:
    its kind's index holds a tenth of the table, so the walk is cheap enough."""
    estimates = (110_000, 1_000_000, 1_110_000)
    assert indexed_rows(estimates, "server") == 110_000
    assert choose_vector_plan(10_000, 110_000, 100, exact_max_rows=2_000) == "hnsw"
    assert choose_vector_plan(10_000, 1_110_000, 100, exact_max_rows=2_000) == "exact"
    # no index of its own (one over every memory serves it), or never analysed
    assert indexed_rows((1_110_000, -1, 1_110_000), "personal") == 1_110_000
    assert indexed_rows((-1, -1, -1), "server") is None


def test_vector_plan_scans_filtered_searches_exactly_up_to_ten_thousand() -> None:
    """A type, importance or time filter may be rare in the scope: the walk could not tell."""
    assert choose_vector_plan(10_000, 10_500, 20, exact_max_rows=2_000, filtered=True) == "exact"
    assert choose_vector_plan(10_001, 10_500, 20, exact_max_rows=2_000, filtered=True) == "hnsw"


def test_an_index_walk_short_of_its_pool_is_noticed() -> None:
    """Each scope kind is searched on its own: a kind walked through the index fills its own
    pool."""
    kinds = ("server", "personal")
    assert not came_back_short(("exact", "exact"), kinds, [], 20)
    assert not came_back_short((), (), [], 20)
    assert came_back_short(("hnsw",), ("server",), ["server"] * 19, 20)
    assert came_back_short(("hnsw",), ("personal",), [None] * 19, 20)
    assert not came_back_short(("hnsw",), ("personal",), [None] * 20, 20)
    assert came_back_short(("hnsw", "hnsw"), kinds, ["server"] * 20 + ["personal"] * 19, 20)
    assert not came_back_short(("hnsw", "hnsw"), kinds, ["server"] * 20 + ["personal"] * 20, 20)
    # the server-wide walk is short, though the exact personal scan filled its pool
    assert came_back_short(("hnsw", "exact"), kinds, ["server"] * 5 + ["personal"] * 20, 20)
    assert not came_back_short(("hnsw", "exact"), kinds, ["server"] * 20 + ["personal"] * 3, 20)
    assert came_back_short(("exact", "hnsw"), kinds, [None] * 40, 20)  # rows that do not say


@pytest.mark.parametrize(
    ("total", "omitted", "ranked"),
    [
        (100, 60, 55),  # a quarter more than the 40 shown, and 5
        (10_000, 9_914, 100),  # 86 shown: the few more stop at one index walk's worth
        (10_000, 9_880, 120),  # a block showing more than that ranks what it shows
        (10_000, 9_700, 200),  # never more than the window the build holds
        (50, 10, 50),  # never more than the scope
    ],
)
def test_how_many_memories_a_block_ranks(total: int, omitted: int, ranked: int) -> None:
    assert wanted(total, omitted) == ranked
