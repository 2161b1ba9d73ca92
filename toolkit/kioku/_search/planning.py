"""Exact scan or HNSW index for a scope's vector candidates: a pure cost rule."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

VectorPlan = Literal["exact", "hnsw"]
VectorPlans = tuple[VectorPlan, ...]
"""One plan per scope kind a search covers: server-wide memories first, then personal ones."""

HNSW_MAX_VISITS = 20_000
"""Rows a filtered HNSW scan is expected to visit at most; a scope whose rows are rarer
than ``pool`` in this many is scanned exactly. The scan itself may visit five times as
many (``hnsw.max_scan_tuples``, ``kioku._db.vectors.HNSW_SEARCH_SETTINGS``) before it
gives up, room for stale estimates and for filters on type or importance."""
HNSW_SAVING = 4
"""The index must visit at most a quarter of the rows an exact scan reads."""
HNSW_EF_SEARCH = 100
"""Candidates the graph walk collects before it returns any (``hnsw.ef_search``), whatever
the pool: with a scope filter, about ``HNSW_EF_SEARCH × index rows / scope rows`` visits."""
FILTERED_EXACT_MAX_ROWS = 10_000
"""Searches that also filter (type, importance, time) scan scopes up to this size exactly:
the graph walk cannot know how rare the filter is in the scope, and may walk far (and,
at its visit cap, come back short) where a scan of this many rows takes about 10 ms."""


def choose_vector_plan(
    scope_rows: int,
    index_rows: int | None,
    pool: int,
    *,
    exact_max_rows: int,
    filtered: bool = False,
) -> VectorPlan:
    """How to find the ``pool`` nearest of ``scope_rows`` memories among ``index_rows``.

    Scopes of at most ``exact_max_rows`` are scanned exactly (``0`` sends every scope
    through the index), and of at most :data:`FILTERED_EXACT_MAX_ROWS` when the search
    also ``filtered``. A filtered HNSW scan visits about ``max(pool, ef_search) ×
    index_rows / scope_rows`` rows before it has ``pool`` of the scope's (``index_rows``: those
    of the index walked, :func:`indexed_rows`); it is chosen when that is
    both within :data:`HNSW_MAX_VISITS` and a fraction (:data:`HNSW_SAVING`) of the exact
    scan. Unknown index sizes keep the exact scan.
    """
    if exact_max_rows <= 0:
        return "hnsw"
    if filtered:
        exact_max_rows = max(exact_max_rows, FILTERED_EXACT_MAX_ROWS)
    if scope_rows <= exact_max_rows or index_rows is None:
        return "exact"
    visits = max(pool, HNSW_EF_SEARCH) * max(index_rows, scope_rows) / scope_rows
    return "hnsw" if visits <= min(HNSW_MAX_VISITS, scope_rows / HNSW_SAVING) else "exact"


def indexed_rows(estimates: Sequence[int], kind: str) -> int | None:
    """The rows a walk for ``kind`` goes through: its own index's, else the table's.

    A kind without an index of its own is served by one over every memory (as databases
    set up before the per-kind indexes have). ``estimates``: the estimated rows of the
    server-wide index, the personal one and the table, ``-1`` where there is no such index
    or it was never analysed. ``None``: not known.
    """
    server, personal, table = estimates
    own = server if kind == "server" else personal
    return own if own >= 0 else (table if table >= 0 else None)


def came_back_short(
    plans: VectorPlans, kinds: Sequence[str], found: Sequence[str | None], pool: int
) -> bool:
    """Whether an index walk stopped before it found ``pool`` rows of its scope kind.

    ``plans`` and ``kinds`` go together (a plan per kind, each kind searched on its own);
    ``found`` is the kind of each vector row returned, ``None`` where the rows do not say
    (then, with several kinds, the walk is taken to be short).
    """
    if len(kinds) == 1:
        return plans[0] == "hnsw" and len(found) < pool
    return any(
        sum(1 for row_kind in found if row_kind == kind) < pool
        for kind, plan in zip(kinds, plans, strict=True)
        if plan == "hnsw"
    )
