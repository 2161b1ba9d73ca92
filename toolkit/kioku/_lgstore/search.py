"""A search with a query: kioku's hybrid ranking, within one namespace prefix.

The prefix's indexed items are ranked by vector distance and by full-text match, as
memories are (the same ``halfvec`` embeddings and ``search_vector``), and the two rankings
are fused by kioku's reciprocal rank fusion (:func:`kioku._search.fusion.fuse_candidates`).
There is no relevance floor: like LangGraph's stores, a search returns the best items it
has, however far from the query.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from langgraph.store.base import SearchItem
from sqlalchemy import text
from sqlalchemy.orm import Session

from kioku._db.vectors import halfvec_text
from kioku._deps import KiokuDeps
from kioku._lgstore.sql import ITEMS_BY_MEMORY, Params, candidates_sql
from kioku._recorded_embedder import again_by_text, query_embedding, vectors_usable
from kioku._search.candidates import text_terms
from kioku._search.fusion import fuse_candidates
from kioku._search.rows import RankedRow
from kioku._search.scoring import FusionWeights

logger = logging.getLogger(__name__)

STORE_WEIGHTS = FusionWeights(relevance=0.0)
"""Vector and text rankings only: items carry no importance and do not fade with age."""
MIN_POOL = 20
"""Candidates each ranking keeps at least (kioku's search keeps as many)."""


def searched(
    deps: KiokuDeps,
    session: Session,
    query: str,
    filtered: tuple[str, Params],
    *,
    limit: int,
    offset: int,
) -> list[SearchItem]:
    """:func:`ranked_items` for ``query``, by vector and text; by text alone when no vector.

    A query vector meeting a column of another size (``kioku reembed`` switched embedders
    while this process ran) is noted (:func:`kioku._recorded_embedder.again_by_text`) and
    the search runs again by text, as kioku's own search tool does.
    """
    vector = query_embedding(deps, query)

    def attempt() -> list[SearchItem]:
        usable = vector if vectors_usable(deps) else None
        return ranked_items(session, query, usable, filtered, limit=limit, offset=offset)

    return again_by_text(deps, attempt, session.rollback)


def ranked_items(
    session: Session,
    query: str,
    vector: Sequence[float] | None,
    where: tuple[str, Params],
    *,
    limit: int,
    offset: int,
) -> list[SearchItem]:
    """The items ranked ``offset`` to ``offset + limit`` for ``query``, best first.

    Args:
        session: where to read.
        query: the words searched as text.
        vector: the query's embedding (``None``: text only).
        where: the prefix and filter conditions (:func:`kioku._lgstore.sql.filter_sql`'s
            text for alias ``i``) and every parameter, the prefix's included.
        limit: how many items.
        offset: how many of the best to skip.

    Returns:
        :class:`SearchItem` s whose ``score`` is the fused score (higher is better).
    """
    terms = text_terms(query, None)
    if vector is None and terms is None:
        return []
    filters, params = where
    sql = candidates_sql(filters, vector=vector is not None, text=terms is not None)
    found = session.execute(
        text(sql),
        {
            **params,
            "vector": halfvec_text(vector) if vector is not None else None,
            "terms": terms,
            "pool": max(offset + limit, MIN_POOL),
        },
    )
    rows = [RankedRow._make(row) for row in found]
    by_vector = sorted((r for r in rows if r.source == "vector"), key=lambda r: (r.score, r.id))
    by_text = sorted((r for r in rows if r.source == "text"), key=lambda r: (-r.score, r.id))
    fusion = fuse_candidates(
        by_vector, by_text, now=datetime.now(UTC), window=None, weights=STORE_WEIGHTS
    )
    page = fusion.order[offset : offset + limit]
    return _items(session, page)


def _items(session: Session, page: Sequence[tuple[int, float]]) -> list[SearchItem]:
    """The items of the ranked memory ids, in the ranking's order, with their scores."""
    if not page:
        return []
    rows = session.execute(text(ITEMS_BY_MEMORY), {"ids": [memory_id for memory_id, _ in page]})
    by_memory: Mapping[int, Any] = {row.memory_id: row for row in rows}
    return [
        search_item(row, score)
        for memory_id, score in page
        if (row := by_memory.get(memory_id)) is not None
    ]


def item_fields(row: Any) -> dict[str, Any]:
    """An item row's (namespace, key, value, created_at, updated_at) as ``Item`` arguments."""
    return {
        "namespace": tuple(row.namespace),
        "key": row.key,
        "value": row.value,
        "created_at": row.created_at,
        "updated_at": row.updated_at,
    }


def search_item(row: Any, score: float | None = None) -> SearchItem:
    """An item row as a search result."""
    return SearchItem(**item_fields(row), score=score)
