"""Candidate statements: a scope's nearest memories by vector, and by text.

Each scope kind is searched exactly or through the HNSW index (:func:`vector_plan`, by its
size); the statements are written as :data:`~kioku._db.driver.Steps` so that a turn can
send several together.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.orm import Session

from kioku._db.driver import Statement, Steps, run_steps
from kioku._db.vectors import (
    EXACT_SEARCH_MAX_ROWS,
    HNSW_INDEXES,
    HNSW_SEARCH_SETTINGS,
    HNSW_SETTINGS_APPLIED,
)
from kioku._domain.visibility import Visibility
from kioku._search.planning import (
    VectorPlans,
    came_back_short,
    choose_vector_plan,
    indexed_rows,
)
from kioku._search.query import asked_words, or_tsquery, query_words
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
_INDEXED_ROWS = text(
    "SELECT coalesce((SELECT reltuples::bigint FROM pg_class "
    "WHERE oid = to_regclass(:server)), -1), "
    "coalesce((SELECT reltuples::bigint FROM pg_class "
    "WHERE oid = to_regclass(:personal)), -1), "
    "(SELECT reltuples::bigint FROM pg_class WHERE oid = 'memories'::regclass)"
)
"""The estimated rows of each scope kind's HNSW index, then of the table (``-1``: never
analysed, or no such index)."""
_INDEXED_KEY = "memories indexes"
"""The key under which ``ScopeSizes`` keeps :data:`_INDEXED_ROWS`."""


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
    estimates: tuple[int, ...] = (-1, -1, -1)  # not needed: every kind within exact search
    if 0 < exact_max_rows < max(counts):
        estimates = _counted(
            sizes,
            _INDEXED_KEY,
            lambda: tuple(int(n) for n in session.execute(_INDEXED_ROWS, HNSW_INDEXES).one()),
        )
    plans = tuple(
        choose_vector_plan(
            size,
            indexed_rows(estimates, kind),
            pool,
            exact_max_rows=exact_max_rows,
            filtered=filtered,
        )
        for size, kind in zip(counts, visibility.kinds(), strict=True)
    )
    if "hnsw" in plans:
        _apply_hnsw_settings(session)
    return plans


def text_terms(query: str, shares: Mapping[str, float] | None) -> str | None:
    """The full-text query of ``query``: its words less those too common in the scope."""
    return _distinctive_query(query, query_words(query), shares)


def weighed_terms(query: str, shares: Mapping[str, float] | None) -> str | None:
    """What a memory's share of ``query`` is counted over (the relevance floor).

    :func:`text_terms` less the words that only make it a question
    (:func:`kioku._search.query.asked_words`).
    """
    return _distinctive_query(query, asked_words(query), shares)


def _distinctive_query(
    query: str, words: list[str], shares: Mapping[str, float] | None
) -> str | None:
    if shares is not None:
        words = distinctive_words(words, shares)
    return or_tsquery(query, words)


@dataclass(frozen=True)
class CandidateSearch:
    """What a search's candidates must be: near ``query_vector``, or matching ``terms``."""

    visibility: Visibility
    query_vector: Sequence[float] | None
    terms: str | None
    """The text query (:func:`text_terms`); ``None``: no text candidates."""
    memory_type: str | None
    pool: int
    """Candidates kept of each source (and of each scope kind, for vectors)."""
    min_importance: float | None = None
    since: datetime | None = None
    until: datetime | None = None
    details: bool = True
    """Rows hold :data:`DETAIL_COLUMNS`, else :data:`RANKING_COLUMNS`."""
    weighed: str | None = None
    """What each text match's share of the query is counted over (:func:`weighed_terms`);
    ``None``: ``terms``."""

    @property
    def timed(self) -> bool:
        """Whether only memories whose event happened in a range are wanted."""
        return self.since is not None or self.until is not None

    @property
    def filtered(self) -> bool:
        """Whether the search also filters by type, importance or time."""
        return self.memory_type is not None or self.min_importance is not None or self.timed

    def params(self) -> dict[str, Any]:
        """The candidates statement's parameters, whatever its vector plan."""
        return search_params(
            self.visibility,
            memory_type=self.memory_type,
            min_importance=self.min_importance,
            vector=self.query_vector,
            terms=self.terms,
            weighed=self.weighed,
            pool=self.pool,
            since=self.since,
            until=self.until,
        )

    def statement(self, plan: VectorPlans | None, params: dict[str, Any]) -> Statement:
        """The candidates statement, its vector candidates found as ``plan`` says."""
        shape = SearchShape.of(
            self.visibility,
            memory_type=self.memory_type,
            vector=plan,
            text=self.terms is not None,
            min_importance=self.min_importance,
            timed=self.timed,
            details=self.details,
            pool=self.pool,
        )
        return candidates_sql(shape), params


def _candidates(
    session: Session,
    search: CandidateSearch,
    *,
    exact_max_rows: int = EXACT_SEARCH_MAX_ROWS,
    sizes: ScopeSizes | None = None,
) -> dict[str, list[CandidateRow]]:
    """Vector and text candidates in one statement: rows per source, best first."""
    steps = row_steps(
        session, search, CandidateRow._make, exact_max_rows=exact_max_rows, sizes=sizes
    )
    return run_steps(session, steps)


def _by_source(rows: Iterable[Any], make: Callable[[Iterable[Any]], Row]) -> dict[str, list[Row]]:
    found: dict[str, list[Row]] = {"vector": [], "text": []}
    for row in rows:
        candidate = make(row)
        found[candidate.source].append(candidate)
    return found


def row_steps(
    session: Session,
    search: CandidateSearch,
    make: Callable[[Iterable[Any]], Row],
    *,
    exact_max_rows: int = EXACT_SEARCH_MAX_ROWS,
    sizes: ScopeSizes | None = None,
) -> Steps[dict[str, list[Row]]]:
    """``search``'s candidates per source, best first, built by ``make``; its statement yielded.

    An index search that comes back with fewer than ``pool`` vector rows (its walk reached
    ``hnsw.max_scan_tuples`` first) is done again exactly, so no search comes back short.
    """
    visibility, pool = search.visibility, search.pool
    plan = (
        vector_plan(
            session,
            visibility,
            pool=pool,
            exact_max_rows=exact_max_rows,
            sizes=sizes,
            filtered=search.filtered,
        )
        if search.query_vector is not None
        else None
    )
    params = search.params()
    found = _by_source((yield search.statement(plan, params)), make)
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
        found = _by_source((yield search.statement(tuple("exact" for _ in plan), params)), make)
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
    search = CandidateSearch(
        visibility, query_vector=query_vector, terms=None, memory_type=memory_type, pool=limit
    )
    return _candidates(session, search, exact_max_rows=exact_max_rows, sizes=sizes)["vector"]


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
    search = CandidateSearch(
        visibility, query_vector=None, terms=or_tsquery(query), memory_type=memory_type, pool=limit
    )
    found = _candidates(session, search)
    return [row.id for row in found["text"]]
