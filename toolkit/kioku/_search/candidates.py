"""Candidate statements: a scope's nearest memories by vector, and by text.

Each scope kind is searched exactly or through the HNSW index (:func:`vector_plan`, by its
size); the statements are written as :data:`~kioku._db.driver.Steps` so that a turn can
send several together.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.orm import Session

from kioku._db.driver import Statement, Steps, run_steps
from kioku._db.vectors import (
    EXACT_SEARCH_MAX_ROWS,
    HNSW_SEARCH_SETTINGS,
    HNSW_SETTINGS_APPLIED,
)
from kioku._domain.visibility import Visibility
from kioku._search.planning import VectorPlans, came_back_short, choose_vector_plan
from kioku._search.query import or_tsquery, query_words
from kioku._search.rows import CandidateRow, Row
from kioku._search.sizes import ScopeSizes
from kioku._search.sql import (
    SearchShape,
    candidates_sql,
    scope_size_sql,
    search_params,
)
from kioku._search.terms import distinctive_words

_HNSW_LOCAL = text(
    "SELECT "
    + ", ".join(f"set_config('{k}', '{v}', true)" for k, v in HNSW_SEARCH_SETTINGS.items())
)
_BEGIN = text("BEGIN")


def _apply_hnsw_settings(session: Session) -> None:
    """Make sure the search's statements run with :data:`HNSW_SEARCH_SETTINGS`.

    Connections of kioku's engines carry them from the start (or from the role, behind a
    pooler that refuses startup options). On others they are set for the transaction;
    outside one (autocommit), the search opens a transaction of its own, which the
    connection's return to its pool ends: a session setting would outlive the search and,
    behind a pooler in transaction mode, reach other clients' statements instead.
    """
    connection = session.connection()
    if connection.info.get(HNSW_SETTINGS_APPLIED):
        return
    if getattr(connection.connection.driver_connection, "autocommit", False):
        connection.execute(_BEGIN)
    connection.execute(_HNSW_LOCAL)


SIZE_COUNT_CAP = 100_000
"""Scope sizes are counted up to this many rows (once a minute, see ``ScopeSizes``); a larger
scope counts as this many, which errs toward the exact scan only in tables of over 10
million memories."""
_TABLE_ROWS = text("SELECT reltuples::bigint FROM pg_class WHERE oid = 'memories'::regclass")
_TABLE_KEY = "memories table"
"""The key under which ``ScopeSizes`` keeps the table's estimated row count."""


def _counted(
    sizes: ScopeSizes | None, key: Hashable, count: Callable[[], tuple[int, ...]]
) -> tuple[int, ...]:
    size = sizes.get(key) if sizes is not None else None
    if size is None:
        size = count()
        if sizes is not None:
            sizes.put(key, size)
    return size


def vector_plan(
    session: Session,
    visibility: Visibility,
    *,
    pool: int,
    exact_max_rows: int,
    sizes: ScopeSizes | None,
    filtered: bool = False,
) -> VectorPlans:
    """Exact search or HNSW for each scope kind, by :func:`choose_vector_plan` on its size.

    HNSW's settings are applied when a kind needs them. ``sizes`` spares most searches
    the counts that make this choice; ``filtered``: the search also filters by type,
    importance or time.
    """
    if not visibility.kinds():
        return ()
    shape = SearchShape.of(visibility, memory_type=None, vector=None, text=False)
    counts = _counted(
        sizes,
        visibility,
        lambda: tuple(
            int(count)
            for count in session.execute(
                text(scope_size_sql(shape)), search_params(visibility, cap=SIZE_COUNT_CAP)
            ).one()
        ),
    )
    table: int | None = None
    if 0 < exact_max_rows < max(counts):
        (estimate,) = _counted(
            sizes, _TABLE_KEY, lambda: (int(session.execute(_TABLE_ROWS).scalar_one()),)
        )
        table = estimate if estimate >= 0 else None  # never analysed: unknown
    plans = tuple(
        choose_vector_plan(size, table, pool, exact_max_rows=exact_max_rows, filtered=filtered)
        for size in counts
    )
    if "hnsw" in plans:
        _apply_hnsw_settings(session)
    return plans


def text_terms(query: str, shares: Mapping[str, float] | None) -> str | None:
    words = query_words(query)
    if shares is not None:
        words = distinctive_words(words, shares)
    return or_tsquery(query, words)


def _candidates(
    session: Session,
    visibility: Visibility,
    *,
    query_vector: Sequence[float] | None,
    terms: str | None,
    memory_type: str | None,
    pool: int,
    min_importance: float | None = None,
    exact_max_rows: int = EXACT_SEARCH_MAX_ROWS,
    sizes: ScopeSizes | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> dict[str, list[CandidateRow]]:
    """Vector and text candidates in one statement: rows per source, best first."""
    return run_steps(
        session,
        row_steps(
            session,
            visibility,
            CandidateRow._make,
            details=True,
            query_vector=query_vector,
            terms=terms,
            memory_type=memory_type,
            pool=pool,
            min_importance=min_importance,
            exact_max_rows=exact_max_rows,
            sizes=sizes,
            since=since,
            until=until,
        ),
    )


def row_steps(
    session: Session,
    visibility: Visibility,
    make: Callable[[Iterable[Any]], Row],
    *,
    details: bool,
    query_vector: Sequence[float] | None,
    terms: str | None,
    memory_type: str | None,
    pool: int,
    min_importance: float | None = None,
    exact_max_rows: int = EXACT_SEARCH_MAX_ROWS,
    sizes: ScopeSizes | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> Steps[dict[str, list[Row]]]:
    """:func:`_candidates`, rows built by ``make``; the candidates statement is yielded.

    Rows hold :data:`DETAIL_COLUMNS` with ``details``, else :data:`RANKING_COLUMNS`. An
    index search that comes back with fewer than ``pool`` vector rows (its walk reached
    ``hnsw.max_scan_tuples`` first) is done again exactly, so no search comes back short.
    """
    timed = since is not None or until is not None
    plan = (
        vector_plan(
            session,
            visibility,
            pool=pool,
            exact_max_rows=exact_max_rows,
            sizes=sizes,
            filtered=memory_type is not None or min_importance is not None or timed,
        )
        if query_vector is not None
        else None
    )
    params = search_params(
        visibility,
        memory_type=memory_type,
        min_importance=min_importance,
        vector=query_vector,
        terms=terms,
        pool=pool,
        since=since,
        until=until,
    )

    def statement(plan: VectorPlans | None) -> Statement:
        shape = SearchShape.of(
            visibility,
            memory_type=memory_type,
            vector=plan,
            text=terms is not None,
            min_importance=min_importance,
            timed=timed,
            details=details,
            pool=pool,
        )
        return candidates_sql(shape), params

    def candidates(rows: Iterable[Any]) -> dict[str, list[Row]]:
        found: dict[str, list[Row]] = {"vector": [], "text": []}
        for row in rows:
            candidate = make(row)
            found[candidate.source].append(candidate)
        return found

    found = candidates((yield statement(plan)))
    if (
        plan is not None
        and "hnsw" in plan
        and came_back_short(
            plan,
            visibility.kinds(),
            [getattr(row, "scope", None) for row in found["vector"]],
            pool,
        )
    ):
        found = candidates((yield statement(tuple("exact" for _ in plan))))
    # Vector scores are distances (smaller is better); text scores are ranks.
    found["vector"].sort(key=lambda row: (row.score, row.id))
    found["text"].sort(key=lambda row: (-row.score, row.id))
    return found


def nearest(
    session: Session,
    visibility: Visibility,
    query_vector: Sequence[float],
    *,
    memory_type: str | None = None,
    limit: int,
    exact_max_rows: int = EXACT_SEARCH_MAX_ROWS,
    sizes: ScopeSizes | None = None,
) -> list[CandidateRow]:
    """Nearest memories in scope, nearest first; ``score`` is the cosine distance.

    Scopes of at most ``exact_max_rows`` memories are searched exactly. Larger ones use
    pgvector's iterative index scan, which keeps walking the HNSW graph until enough rows
    pass the scope filter, so a filter selecting 1% of rows still yields ``limit`` results.
    """
    return _candidates(
        session,
        visibility,
        query_vector=query_vector,
        terms=None,
        memory_type=memory_type,
        pool=limit,
        exact_max_rows=exact_max_rows,
        sizes=sizes,
    )["vector"]


def vector_candidates(
    session: Session,
    visibility: Visibility,
    query_vector: Sequence[float],
    *,
    memory_type: str | None,
    limit: int,
    exact_max_rows: int = EXACT_SEARCH_MAX_ROWS,
    sizes: ScopeSizes | None = None,
) -> list[int]:
    """The ids of :func:`nearest`."""
    rows = nearest(
        session,
        visibility,
        query_vector,
        memory_type=memory_type,
        limit=limit,
        exact_max_rows=exact_max_rows,
        sizes=sizes,
    )
    return [row.id for row in rows]


def text_candidates(
    session: Session, visibility: Visibility, query: str, *, memory_type: str | None, limit: int
) -> list[int]:
    """Memories matching any query word (English stemming), best ``ts_rank_cd`` first."""
    found = _candidates(
        session,
        visibility,
        query_vector=None,
        terms=or_tsquery(query),
        memory_type=memory_type,
        pool=limit,
    )
    return [row.id for row in found["text"]]
