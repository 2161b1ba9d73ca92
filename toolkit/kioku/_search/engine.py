"""Hybrid search: vector candidates + full-text candidates + relevance, fused by RRF."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, Generic, NamedTuple, Protocol, TypeVar

from sqlalchemy import text
from sqlalchemy.orm import Session

from kioku._db.driver import Statement, Steps, run_steps
from kioku._db.vectors import (
    EXACT_SEARCH_MAX_ROWS,
    HNSW_SEARCH_SETTINGS,
    HNSW_SETTINGS_APPLIED,
)
from kioku._domain.visibility import Visibility
from kioku._search.aids import SearchAids
from kioku._search.planning import VectorPlans, came_back_short, choose_vector_plan
from kioku._search.query import or_tsquery, query_words
from kioku._search.scoring import FusionWeights, fuse, relevance
from kioku._search.sizes import ScopeSizes
from kioku._search.sql import (
    DETAIL_COLUMNS,
    RANKING_COLUMNS,
    SearchShape,
    candidates_sql,
    scope_size_sql,
    search_params,
)
from kioku._search.terms import distinctive_words
from kioku._search.when import narrowing, time_phrase


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
    happened_at: datetime
    """When what it records happened: its event time, else when it was saved."""

    def to_artifact(self) -> dict[str, Any]:
        """JSON-friendly record for the tool artifact."""
        record = asdict(self)
        record["created_at"] = self.created_at.isoformat()
        record["happened_at"] = self.happened_at.isoformat()
        return record


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


def _vector_plan(
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


def _text_terms(query: str, shares: Mapping[str, float] | None) -> str | None:
    words = query_words(query)
    if shares is not None:
        words = distinctive_words(words, shares)
    return or_tsquery(query, words)


class CandidateRow(NamedTuple):
    """One candidate memory as the search statement returns it.

    ``DETAIL_COLUMNS``, then ``score`` (a distance or a text rank), ``source`` and, for
    text candidates, ``matched``: the share of the query's words the memory holds.
    """

    id: int
    scope: str
    server_id: str | None
    user_id: str | None
    memory_type: str
    content: str
    importance: float
    decay_rate: float
    created_at: datetime
    persona_lineage_id: int
    updated_at: datetime
    event_time: datetime | None
    happened_at: datetime
    """When what it records happened: its event time, else when it was saved."""
    score: float
    source: str
    matched: float | None


assert CandidateRow._fields == (*DETAIL_COLUMNS, "score", "source", "matched")


class RankedRow(NamedTuple):
    """A candidate as a ranking needs it, for callers that hold the memories themselves."""

    id: int
    importance: float
    decay_rate: float
    created_at: datetime
    happened_at: datetime
    score: float
    source: str
    matched: float | None


assert RankedRow._fields == (*RANKING_COLUMNS, "score", "source", "matched")


class _Rankable(Protocol):
    """What fusion reads of a candidate (both row kinds)."""

    @property
    def id(self) -> int: ...
    @property
    def importance(self) -> float: ...
    @property
    def decay_rate(self) -> float: ...
    @property
    def created_at(self) -> datetime: ...
    @property
    def happened_at(self) -> datetime: ...
    @property
    def score(self) -> float: ...
    @property
    def source(self) -> str: ...
    @property
    def matched(self) -> float | None: ...


Row = TypeVar("Row", bound=_Rankable)


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
        _row_steps(
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


def _row_steps(
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
        _vector_plan(
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
    min_similarity: float | None = None,
    min_matched: float = MIN_MATCHED_SHARE,
    since: datetime | None = None,
    until: datetime | None = None,
) -> Steps[Ranking]:
    """The ``limit`` best memories for ``query`` among those ``visibility`` allows.

    Vector and text candidates come back in one statement, fused with relevance by RRF;
    :meth:`Ranking.hits` reports them, :meth:`Ranking.best` gives the rows. ``aids`` (a
    store's ``search_aids``) remembers scope sizes and word statistics between searches:
    without them every search counts its scope and searches by every word.

    ``min_similarity`` is the relevance floor: unless some memory is at least this similar
    to the query (cosine), a query about nothing stored finds nothing instead of the least
    unrelated memories; a memory holding ``min_matched`` of the
    query's words lifts the floor too, as does, for a query asking only what happened at
    some time ("what happened last week"), one that happened then. When there is nothing
    to compare vectors with (no query vector, no embedded memory), any text match counts.

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
        min_similarity=min_similarity,
        min_matched=min_matched,
        since=since,
        until=until,
    )
    return Ranking(
        fused.order,
        fused.rows,
        fused.relevance,
        {memory_id: rank for rank, memory_id in enumerate(fused.by_vector, start=1)},
        {memory_id: rank for rank, memory_id in enumerate(fused.by_text, start=1)},
        limit,
    )


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
    min_similarity: float | None = None,
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
        min_similarity=min_similarity,
    )
    return [memory_id for memory_id, _ in fused.order[:limit]]


@dataclass(frozen=True)
class _Fusion(Generic[Row]):
    order: list[tuple[int, float]]
    rows: dict[int, Row]
    relevance: dict[int, float]
    by_vector: list[int]
    by_text: list[int]


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
    min_similarity: float | None = None,
    min_matched: float = MIN_MATCHED_SHARE,
    since: datetime | None = None,
    until: datetime | None = None,
) -> Steps[_Fusion[Row]]:
    """The one ranking behind :func:`rank_candidates` and :func:`rank_ids`.

    Its statements are yielded (:mod:`kioku._db.driver`'s steps), so that a caller may
    send several rankings' statements together.
    """
    weights = weights or FusionWeights()
    # Each ranking contributes its best 2×limit (at least 20): enough for fusion, and the
    # filtered HNSW scan costs grow with it (measured in bench/RESULTS.md).
    pool = max(candidates or 2 * limit, limit, 20)
    shares = aids.term_shares.get(session, visibility) if aids is not None else None
    phrase = time_phrase(query, now)
    window = phrase.window if phrase is not None else None
    # "what happened last week": only then, and any memory of then is about it
    when_only = window if phrase is not None and phrase.asks_only_when else None
    narrowed = narrowing(phrase, since, until)
    if narrowed is not None:
        since, until = narrowed.since, narrowed.until
    found = yield from _row_steps(
        session,
        visibility,
        make,
        details=details,
        query_vector=query_vector,
        # A time phrase's words ("May 2025", "last week") say when, not what.
        terms=_text_terms(phrase.rest if phrase is not None else query, shares),
        memory_type=memory_type,
        min_importance=min_importance,
        pool=pool,
        sizes=aids.sizes if aids is not None else None,
        since=since,
        until=until,
    )
    vector_rows, text_rows = found["vector"], found["text"]
    if (
        min_similarity is not None
        and vector_rows  # without vectors to compare, any text match counts
        and not (
            any(1.0 - row.score >= min_similarity for row in vector_rows)
            or any((row.matched or 0.0) >= min_matched for row in text_rows)
            or (
                when_only is not None
                and any(when_only.holds(r.happened_at) for r in (*vector_rows, *text_rows))
            )
        )
    ):
        # The relevance floor: when no memory is this similar to the query, nor holds
        # enough of its words, nor happened when a query about nothing else asks, nothing
        # stored is about it.
        vector_rows, text_rows = [], []
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
    return _Fusion(order, rows, scores, by_vector, by_text)
