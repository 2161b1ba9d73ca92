"""Query words too common to search by, as PostgreSQL's own statistics count them.

A word in many memories ("like", a speaker's name) matches thousands of rows that
must all be ranked, yet says little about which memory is wanted: the full-text
query leaves such words out, like a search engine's inverse document frequency.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence

import snowballstemmer
from sqlalchemy import text
from sqlalchemy.orm import Session

COMMON_TERM_SHARE = 0.01
"""Words in more than this share of memories are left out of the text query."""

_STATISTICS = text(
    "SELECT most_common_elems::text::text[], most_common_elem_freqs FROM pg_stats "
    "WHERE schemaname = current_schema() AND tablename = 'memories' "
    "AND attname = 'search_vector'"
)
_STEMMER = snowballstemmer.stemmer("english")  # the algorithm of PostgreSQL's 'english'
_ENGLISH_STOP = """
i me my myself we our ours ourselves you your yours yourself yourselves he him his
himself she her hers herself it its itself they them their theirs themselves what which
who whom this that these those am is are was were be been being have has had having do
does did doing a an the and but if or because as until while of at by for with about
against between into through during before after above below to from up down in out on
off over under again further then once here there when where why how all any both each
few more most other some such no nor not only own same so than too very s t can will
just don should now
"""
STOP_WORDS = frozenset(_ENGLISH_STOP.split())
"""PostgreSQL's ``english.stop``: words its 'english' configuration drops anyway."""


def distinctive_words(
    words: Sequence[str], shares: Mapping[str, float], threshold: float = COMMON_TERM_SHARE
) -> list[str]:
    """The words of ``words`` worth searching by: no stop words, no common words.

    When every remaining word is common, the rarest one stays.
    """
    content = [word for word in words if word.lower() not in STOP_WORDS]
    share = {word: shares.get(_STEMMER.stemWord(word.lower()), 0.0) for word in content}
    kept = [word for word in content if share[word] <= threshold]
    if kept or not content:
        return kept
    return [min(content, key=lambda word: share[word])]


class TermShares:
    """Share of memories containing each common stemmed word, reloaded every ``ttl_seconds``.

    Read from ``pg_stats`` (kept current by autovacuum's ANALYZE); empty before the
    first ANALYZE, when no word counts as common.
    """

    def __init__(
        self, ttl_seconds: float = 300.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        """Create an empty table, loaded on first use."""
        self._ttl, self._clock = ttl_seconds, clock
        self._shares: dict[str, float] = {}
        self._expires = float("-inf")
        self._lock = threading.Lock()

    def get(self, session: Session) -> Mapping[str, float]:
        """The current shares, loading them through ``session`` when stale."""
        with self._lock:
            if self._clock() < self._expires:
                return self._shares
        row = session.execute(_STATISTICS).first()
        shares: dict[str, float] = {}
        if row is not None and row[0] is not None:
            # The frequency array ends with three summary numbers: zip drops them.
            shares = dict(zip(row[0], row[1], strict=False))
        with self._lock:
            self._shares, self._expires = shares, self._clock() + self._ttl
        return shares
