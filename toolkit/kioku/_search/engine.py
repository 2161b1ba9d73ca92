"""Hybrid search: vector candidates + full-text candidates + relevance, fused by RRF."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from kioku._calibration import RelevanceFloor
from kioku._db.driver import Steps, run_steps
from kioku._domain.visibility import Visibility
from kioku._search.aids import SearchAids
from kioku._search.candidates import CandidateSearch, row_steps, text_terms, weighed_terms
from kioku._search.fusion import Fusion, clears_floor, fuse_candidates, query_time
from kioku._search.rows import CandidateRow, RankedRow, Row, SearchHit
from kioku._search.scoring import FusionWeights


@dataclass(frozen=True)
class Ranking:
    """Candidates fused into one order, with what each ranking said of them."""

    fused: list[tuple[int, float]]
    """``(memory id, fused score)``, best first."""
    rows: dict[int, CandidateRow]
    relevance: dict[int, float]
    vector_rank: dict[int, int]
    text_rank: dict[int, int]
    limit: int
    """How many memories the search asked for."""

    @classmethod
    def of(cls, fusion: Fusion[CandidateRow], limit: int) -> Ranking:
        """``fusion``'s order, for a search that asked for ``limit`` memories."""
        return cls(
            fusion.order,
            fusion.rows,
            fusion.relevance,
            {memory_id: rank for rank, memory_id in enumerate(fusion.by_vector, start=1)},
            {memory_id: rank for rank, memory_id in enumerate(fusion.by_text, start=1)},
            limit,
        )

    def best(self, limit: int) -> list[CandidateRow]:
        """The ``limit`` best candidates, best first."""
        return [self.rows[memory_id] for memory_id, _ in self.fused[:limit]]

    def hits(self) -> list[SearchHit]:
        """The ``limit`` best memories, with why each ranked where it did."""
        return [
            SearchHit(
                id=memory_id,
                scope=row.scope,
                server_id=row.server_id,
                user_id=row.user_id,
                memory_type=row.memory_type,
                content=row.content,
                importance=row.importance,
                relevance=self.relevance[memory_id],
                created_at=row.created_at,
                score=score,
                vector_rank=self.vector_rank.get(memory_id),
                text_rank=self.text_rank.get(memory_id),
                happened_at=row.happened_at,
            )
            for memory_id, score in self.fused[: self.limit]
            for row in (self.rows[memory_id],)
        ]


MIN_MATCHED_SHARE = 0.5
"""With a relevance floor, a text match counts when it holds this share of the query's
words (the scope's common words left out)."""


def rank_candidates(
    session: Session,
    visibility: Visibility,
    query: str,
    query_vector: Sequence[float] | None,
    **options: Any,
) -> Ranking:
    """:func:`rank_candidates_steps` (the options are its), its statements run one by one."""
    return run_steps(
        session, rank_candidates_steps(session, visibility, query, query_vector, **options)
    )


def rank_candidates_steps(
    session: Session,
    visibility: Visibility,
    query: str,
    query_vector: Sequence[float] | None,
    *,
    now: datetime,
    memory_type: str | None = None,
    min_importance: float | None = None,
    limit: int = 5,
    candidates: int | None = None,
    weights: FusionWeights | None = None,
    aids: SearchAids | None = None,
    floor: RelevanceFloor | None = None,
    min_matched: float = MIN_MATCHED_SHARE,
    since: datetime | None = None,
    until: datetime | None = None,
) -> Steps[Ranking]:
    """The ``limit`` best memories for ``query`` among those ``visibility`` allows.

    Vector and text candidates come back in one statement, fused with relevance by RRF;
    :meth:`Ranking.hits` reports them, :meth:`Ranking.best` gives the rows. ``aids`` (a
    store's ``search_aids``) remembers scope sizes and word statistics between searches:
    without them every search counts its scope and searches by every word.

    ``floor`` is the relevance floor: unless the vector candidates clear it (one similar
    enough to the query, or standing out from the rest; :class:`RelevanceFloor`), a query
    about nothing stored finds nothing instead of the least unrelated memories; a memory
    holding ``min_matched`` of the query's words lifts the floor
    too, as does, for a query asking only what happened at some time ("what happened last
    week"), one that happened then. When there is nothing to compare vectors with (no query
    vector, no embedded memory), any text match counts.

    ``since`` / ``until`` keep memories whose event happened in that range; a time phrase
    in the query ("last week", "in May", "3 days ago") ranks the candidates of its window
    higher (:mod:`kioku._search.when`), and its words are not searched as text.

    Its statements are yielded (:func:`kioku._db.driver.run_together` sends several
    rankings' at once).
    """
    fused = yield from _fused_steps(
        session,
        visibility,
        query,
        query_vector,
        CandidateRow._make,
        details=True,
        now=now,
        memory_type=memory_type,
        min_importance=min_importance,
        limit=limit,
        candidates=candidates,
        weights=weights,
        aids=aids,
        floor=floor,
        min_matched=min_matched,
        since=since,
        until=until,
    )
    return Ranking.of(fused, limit)


def rank_ids(
    session: Session,
    visibility: Visibility,
    query: str,
    query_vector: Sequence[float] | None,
    **options: Any,
) -> list[int]:
    """:func:`rank_ids_steps` (the options are its), its statements run one by one."""
    return run_steps(session, rank_ids_steps(session, visibility, query, query_vector, **options))


def rank_ids_steps(
    session: Session,
    visibility: Visibility,
    query: str,
    query_vector: Sequence[float] | None,
    *,
    now: datetime,
    limit: int,
    candidates: int | None = None,
    aids: SearchAids | None = None,
    floor: RelevanceFloor | None = None,
) -> Steps[list[int]]:
    """The ids of :func:`rank_candidates`'s ``limit`` best, best first.

    For a caller that already holds the memories: the statement returns only what the
    ranking needs, so it neither joins back to ``memories`` nor sends their text.
    """
    fused = yield from _fused_steps(
        session,
        visibility,
        query,
        query_vector,
        RankedRow._make,
        details=False,
        now=now,
        limit=limit,
        candidates=candidates,
        aids=aids,
        floor=floor,
    )
    return [memory_id for memory_id, _ in fused.order[:limit]]


def _fused_steps(
    session: Session,
    visibility: Visibility,
    query: str,
    query_vector: Sequence[float] | None,
    make: Callable[[Iterable[Any]], Row],
    *,
    details: bool,
    now: datetime,
    limit: int,
    memory_type: str | None = None,
    min_importance: float | None = None,
    candidates: int | None = None,
    weights: FusionWeights | None = None,
    aids: SearchAids | None = None,
    floor: RelevanceFloor | None = None,
    min_matched: float = MIN_MATCHED_SHARE,
    since: datetime | None = None,
    until: datetime | None = None,
) -> Steps[Fusion[Row]]:
    """The one ranking behind :func:`rank_candidates` and :func:`rank_ids`.

    Its statements are yielded (:mod:`kioku._db.driver`'s steps), so that a caller may
    send several rankings' statements together.
    """
    weights = weights or FusionWeights()
    # Each ranking contributes its best 2×limit (at least 20): enough for fusion, and the
    # filtered HNSW scan costs grow with it (measured in bench/RESULTS.md).
    pool = max(candidates or 2 * limit, limit, 20)
    shares = aids.term_shares.get(session, visibility) if aids is not None else None
    asked = query_time(query, now, since, until)
    found = yield from row_steps(
        session,
        CandidateSearch(
            visibility,
            query_vector=query_vector,
            terms=text_terms(asked.about, shares),
            weighed=weighed_terms(asked.about, shares),
            memory_type=memory_type,
            min_importance=min_importance,
            pool=pool,
            since=asked.since,
            until=asked.until,
            details=details,
        ),
        make,
        sizes=aids.sizes if aids is not None else None,
    )
    vector_rows, text_rows = found["vector"], found["text"]
    if not clears_floor(
        vector_rows,
        text_rows,
        floor=floor,
        min_matched=min_matched,
        only_when=asked.only_when,
    ):
        # Nothing stored is about the query.
        vector_rows, text_rows = [], []
    return fuse_candidates(vector_rows, text_rows, now=now, window=asked.window, weights=weights)
