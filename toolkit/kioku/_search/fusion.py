"""A ranking's pure stages: what a query says of time, the relevance floor, the fusion."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Generic

from kioku._calibration import RelevanceFloor
from kioku._search.rows import Rankable, Row
from kioku._search.scoring import FusionWeights, fuse, relevance
from kioku._search.when import Window, narrowing, time_phrase


@dataclass(frozen=True)
class QueryTime:
    """What a query says of time, and what it asks about besides."""

    about: str
    """The query without its time phrase: the phrase's words ("May 2025", "last week") say
    when, not what."""
    window: Window | None
    """The window a time phrase names: its candidates rank higher."""
    only_when: Window | None
    """The window of a query asking only what happened then ("what happened last week"):
    only then, and any memory of then is about it."""
    since: datetime | None
    until: datetime | None
    """The range of event times searched: the caller's, else ``only_when``'s."""


def query_time(
    query: str, now: datetime, since: datetime | None, until: datetime | None
) -> QueryTime:
    """What ``query``, asked at ``now`` for events from ``since`` until ``until``, says of time."""
    phrase = time_phrase(query, now)
    if phrase is None:
        return QueryTime(query, None, None, since, until)
    only_when = phrase.window if phrase.asks_only_when else None
    narrowed = narrowing(phrase, since, until)
    if narrowed is not None:
        since, until = narrowed.since, narrowed.until
    return QueryTime(phrase.rest, phrase.window, only_when, since, until)


def clears_floor(
    vector_rows: Sequence[Rankable],
    text_rows: Sequence[Rankable],
    *,
    floor: RelevanceFloor | None,
    min_matched: float,
    only_when: Window | None,
) -> bool:
    """Whether the candidates are about the query at all: the relevance floor.

    They are when the vector candidates clear ``floor`` (:class:`RelevanceFloor`: one
    similar enough, or standing out), or a memory holds ``min_matched`` of its words, or
    happened when a query about nothing else asks (``only_when``); without a floor, or
    vectors to compare, any text match counts.
    """
    if floor is None or not vector_rows:
        return True
    return (
        floor.cleared_by([1.0 - row.score for row in vector_rows])
        or any((row.matched or 0.0) >= min_matched for row in text_rows)
        or (
            only_when is not None
            and any(only_when.holds(r.happened_at) for r in (*vector_rows, *text_rows))
        )
    )


@dataclass(frozen=True)
class Fusion(Generic[Row]):
    """Candidates fused into one order, with the rankings fused."""

    order: list[tuple[int, float]]
    """``(memory id, fused score)``, best first."""
    rows: dict[int, Row]
    relevance: dict[int, float]
    by_vector: list[int]
    by_text: list[int]


def fuse_candidates(
    vector_rows: Sequence[Row],
    text_rows: Sequence[Row],
    *,
    now: datetime,
    window: Window | None,
    weights: FusionWeights,
) -> Fusion[Row]:
    """The candidates (each source's best first) fused by RRF with relevance at ``now``.

    Candidates that happened within ``window`` (a time phrase's) form a ranking of their own.
    """
    rows = {row.id: row for row in (*vector_rows, *text_rows)}
    by_vector = [row.id for row in vector_rows]
    by_text = [row.id for row in text_rows]
    scores = {
        memory_id: relevance(
            row.importance, row.decay_rate, (now - row.created_at).total_seconds() / 86400
        )
        for memory_id, row in rows.items()
    }
    by_relevance = sorted(rows, key=lambda memory_id: (-scores[memory_id], memory_id))
    in_window = (
        [
            memory_id
            for memory_id in dict.fromkeys([*by_vector, *by_text])
            if window.holds(rows[memory_id].happened_at)
        ]
        if window is not None
        else []
    )
    order = fuse(
        {"vector": by_vector, "text": by_text, "relevance": by_relevance, "time": in_window},
        {
            "vector": weights.vector,
            "text": weights.text,
            "relevance": weights.relevance,
            "time": weights.time,
        },
    )
    return Fusion(order, rows, scores, by_vector, by_text)
