"""Query words too common to search by, counted in the searched scope's own memories.

A word in many memories ("like", a speaker's name) matches thousands of rows that
must all be ranked, yet says little about which memory is wanted: the full-text
query leaves such words out, like a search engine's inverse document frequency.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.orm import Session

from kioku._domain.visibility import Visibility
from kioku._search.query import SERVER_OWNER_SQL, people_params, personal_owner_sql
from kioku._stemming import stem

COMMON_TERM_SHARE = 0.01
"""Words in more than this share of memories are left out of the text query."""

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
    share = {word: shares.get(stem(word.lower()), 0.0) for word in content}
    kept = [word for word in content if share[word] <= threshold]
    if kept or not content:
        return kept
    return [min(content, key=lambda word: share[word])]


OwnerKey = tuple[str, str, int]
"""``("server", server key, lineage)`` or ``("personal", user id, lineage)``."""

MIN_COMMON_DOCS = 20
"""A word must be in at least this many of a scope's memories to count as common: in a
small scope every word is in a large share of it, yet cheap to rank and telling."""
SAMPLE_ROWS = 20_000
"""Word counts of a scope come from its most recent memories, at most this many."""

_OWNER_WORDS = """
WITH recent AS (
    SELECT search_vector FROM memories WHERE {owner} AND status = 'active'
    ORDER BY id DESC LIMIT :sample
)
SELECT NULL AS word, count(*) AS docs FROM recent
UNION ALL
SELECT word.lexeme, count(*) FROM recent, unnest(recent.search_vector) AS word
GROUP BY word.lexeme HAVING count(*) >= :min_docs
"""
_SERVER_WORDS = text(_OWNER_WORDS.format(owner=SERVER_OWNER_SQL))
_PERSONAL_WORDS = text(_OWNER_WORDS.format(owner=personal_owner_sql(1)))


def owner_keys(visibility: Visibility) -> list[OwnerKey]:
    """The scopes ``visibility`` spans, each counted on its own."""
    keys: list[OwnerKey] = []
    if visibility.include_server:
        keys.append(("server", visibility.server_key, visibility.lineage_id))
    keys.extend(("personal", user, visibility.lineage_id) for user in visibility.personal_user_ids)
    return keys


def combined_shares(counts: Sequence[tuple[int, Mapping[str, int]]]) -> dict[str, float]:
    """Share of memories holding each word, over scopes given as ``(memories, word counts)``.

    Only words in at least :data:`MIN_COMMON_DOCS` memories of the scopes together and
    in more than :data:`COMMON_TERM_SHARE` of them are kept: the others are not common.
    """
    total = sum(memories for memories, _ in counts)
    docs: dict[str, int] = {}
    for _, words in counts:
        for word, count in words.items():
            docs[word] = docs.get(word, 0) + count
    return {
        word: count / total
        for word, count in docs.items()
        if count >= MIN_COMMON_DOCS and count > COMMON_TERM_SHARE * total
    }


@dataclass(frozen=True)
class _Combined:
    counts: tuple[tuple[int, dict[str, int]], ...]
    """The counts combined (held, so they are compared by identity safely)."""
    shares: dict[str, float]


def _same_counts(
    first: Sequence[tuple[int, dict[str, int]]], second: Sequence[tuple[int, dict[str, int]]]
) -> bool:
    return len(first) == len(second) and all(
        a_total == b_total and a_words is b_words
        for (a_total, a_words), (b_total, b_words) in zip(first, second, strict=True)
    )


class TermShares:
    """Share of a scope's memories containing each of its common stemmed words.

    Counted per scope (a server's memories of one lineage, one user's personal ones), from
    that scope's own memories alone: what other servers, lineages or users store never
    changes a search. A search spanning several scopes (the server and the turn's
    participants) sums their counts. Each scope's counts are kept ``ttl_seconds``.
    """

    def __init__(
        self,
        ttl_seconds: float = 300.0,
        max_entries: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Create an empty table, filled on use."""
        self._ttl, self._max, self._clock = ttl_seconds, max_entries, clock
        self._counts: dict[OwnerKey, tuple[float, int, dict[str, int]]] = {}
        self._combined: dict[tuple[OwnerKey, ...], _Combined] = {}
        self._lock = threading.Lock()

    def get(self, session: Session, visibility: Visibility) -> Mapping[str, float]:
        """The common words of the memories ``visibility`` spans, counting through ``session``.

        Combining the scopes' counts walks every word they hold, so the result is kept
        for as long as the counts it was made from are the ones held.
        """
        keys = tuple(owner_keys(visibility))
        counts = tuple(self._owner(session, key) for key in keys)
        with self._lock:
            known = self._combined.get(keys)
        if known is not None and _same_counts(known.counts, counts):
            return known.shares
        shares = combined_shares(counts)
        with self._lock:
            if len(self._combined) >= self._max:
                self._combined.clear()
            self._combined[keys] = _Combined(counts, shares)
        return shares

    def _owner(self, session: Session, key: OwnerKey) -> tuple[int, dict[str, int]]:
        now = self._clock()
        with self._lock:
            entry = self._counts.get(key)
        if entry is not None and now < entry[0]:
            return entry[1], entry[2]
        kind, owner, lineage = key
        statement, params = (
            (_SERVER_WORDS, {"server": owner})
            if kind == "server"
            else (_PERSONAL_WORDS, people_params([owner]))
        )
        rows = session.execute(
            statement,
            {**params, "lineage": lineage, "sample": SAMPLE_ROWS, "min_docs": 2},
        ).all()
        total = next(int(docs) for word, docs in rows if word is None)
        words = {str(word): int(docs) for word, docs in rows if word is not None}
        with self._lock:
            if len(self._counts) >= self._max:
                self._counts.clear()
            self._counts[key] = (now + self._ttl, total, words)
        return total, words
