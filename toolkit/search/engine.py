"""Hybrid search: vector candidates + full-text candidates + relevance, fused by RRF."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Row, func, select, text
from sqlalchemy.orm import Session

from toolkit.db.models import Memory
from toolkit.search.query import Visibility, or_tsquery
from toolkit.search.scoring import FusionWeights, fuse, relevance

EF_SEARCH = 100
"""HNSW candidate list size; with iterative scans it bounds each scan step."""


@dataclass(frozen=True)
class SearchHit:
    """One memory found, with why it ranked where it did."""

    id: int
    scope: str
    server_id: str | None
    user_id: str | None
    memory_type: str
    content: str
    importance: float
    relevance: float
    created_at: datetime
    score: float
    vector_rank: int | None
    text_rank: int | None

    def to_artifact(self) -> dict[str, Any]:
        """JSON-friendly record for the tool artifact."""
        record = asdict(self)
        record["created_at"] = self.created_at.isoformat()
        return record


_DETAILS = (
    Memory.id,
    Memory.scope,
    Memory.server_id,
    Memory.user_id,
    Memory.memory_type,
    Memory.content,
    Memory.importance,
    Memory.decay_rate,
    Memory.created_at,
)
"""Columns every candidate query returns, so no third query is needed."""

_ITERATIVE_SCAN = text(
    "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), "
    f"set_config('hnsw.ef_search', '{EF_SEARCH}', true)"
)


def _vector_rows(
    session: Session,
    visibility: Visibility,
    query_vector: Sequence[float],
    *,
    memory_type: str | None,
    limit: int,
) -> list[Row[Any]]:
    session.execute(_ITERATIVE_SCAN)  # transaction-local, one round trip
    distance = Memory.embedding.cosine_distance(list(query_vector))
    rows = session.execute(
        select(*_DETAILS, distance.label("distance"))
        .where(visibility.condition(memory_type), Memory.embedding.is_not(None))
        .order_by(distance)
        .limit(limit)
    ).all()
    # relaxed_order may return rows slightly out of order: sort them exactly.
    return sorted(rows, key=lambda row: (row.distance, row.id))


def vector_candidates(
    session: Session,
    visibility: Visibility,
    query_vector: Sequence[float],
    *,
    memory_type: str | None,
    limit: int,
) -> list[int]:
    """Nearest memories in scope, nearest first.

    pgvector's iterative index scan keeps scanning the HNSW graph until enough rows pass
    the scope filter, so a filter selecting 1% of rows still yields ``limit`` results.
    """
    rows = _vector_rows(session, visibility, query_vector, memory_type=memory_type, limit=limit)
    return [row.id for row in rows]


def _text_rows(
    session: Session, visibility: Visibility, query: str, *, memory_type: str | None, limit: int
) -> list[Row[Any]]:
    terms = or_tsquery(query)
    if terms is None:
        return []
    tsquery = func.to_tsquery("english", terms)
    rank = func.ts_rank_cd(Memory.search_vector, tsquery)
    rows = session.execute(
        select(*_DETAILS)
        .where(visibility.condition(memory_type), Memory.search_vector.op("@@")(tsquery))
        .order_by(rank.desc(), Memory.id)
        .limit(limit)
    ).all()
    return cast(list[Row[Any]], rows)


def text_candidates(
    session: Session, visibility: Visibility, query: str, *, memory_type: str | None, limit: int
) -> list[int]:
    """Memories matching any query word (English stemming), best ``ts_rank_cd`` first."""
    rows = _text_rows(session, visibility, query, memory_type=memory_type, limit=limit)
    return [row.id for row in rows]


def hybrid_search(
    session: Session,
    visibility: Visibility,
    query: str,
    query_vector: Sequence[float] | None,
    *,
    now: datetime,
    memory_type: str | None = None,
    limit: int = 5,
    candidates: int | None = None,
    weights: FusionWeights | None = None,
) -> list[SearchHit]:
    """The ``limit`` best memories for ``query`` among those ``visibility`` allows."""
    weights = weights or FusionWeights()
    # Each ranking contributes its best 2×limit (at least 20): enough for fusion, and the
    # filtered HNSW scan costs grow with it (measured in bench/RESULTS.md).
    pool = max(candidates or 2 * limit, limit, 20)
    vector_rows = (
        _vector_rows(session, visibility, query_vector, memory_type=memory_type, limit=pool)
        if query_vector is not None
        else []
    )
    text_rows = _text_rows(session, visibility, query, memory_type=memory_type, limit=pool)
    rows = {row.id: row for row in (*vector_rows, *text_rows)}
    if not rows:
        return []
    by_vector = [row.id for row in vector_rows]
    by_text = [row.id for row in text_rows]
    scores = {
        memory_id: relevance(
            row.importance, row.decay_rate, (now - row.created_at).total_seconds() / 86400
        )
        for memory_id, row in rows.items()
    }
    by_relevance = sorted(rows, key=lambda memory_id: (-scores[memory_id], memory_id))
    fused = fuse(
        {"vector": by_vector, "text": by_text, "relevance": by_relevance},
        {"vector": weights.vector, "text": weights.text, "relevance": weights.relevance},
    )
    vector_rank = {memory_id: rank for rank, memory_id in enumerate(by_vector, start=1)}
    text_rank = {memory_id: rank for rank, memory_id in enumerate(by_text, start=1)}
    hits = []
    for memory_id, score in fused[:limit]:
        row = rows[memory_id]
        hits.append(
            SearchHit(
                id=memory_id,
                scope=row.scope,
                server_id=row.server_id,
                user_id=row.user_id,
                memory_type=row.memory_type,
                content=row.content,
                importance=row.importance,
                relevance=scores[memory_id],
                created_at=row.created_at,
                score=score,
                vector_rank=vector_rank.get(memory_id),
                text_rank=text_rank.get(memory_id),
            )
        )
    return hits
