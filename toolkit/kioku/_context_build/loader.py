"""Loading what the context stages render: the I/O side of the context build.

Functions take the build's session (one unit of work per build) where they query.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TypedDict

from sqlalchemy.orm import Session

from kioku._accounts import SETTINGS_SOURCE, AccountRepository, settings_from_row, settings_params
from kioku._calibration import RelevanceFloor, relevance_floor
from kioku._context import PrivacyLevel, TurnContext
from kioku._context_build.select import select_other_channels
from kioku._db.direct import reaches_server
from kioku._db.driver import Named, SentAhead, Steps, idle_connection
from kioku._db.vectors import RECORDED_EMBEDDER_SQL, readable_embedder
from kioku._deps import KiokuDeps
from kioku._domain.records import MemoryRecord
from kioku._domain.scopes import PersonalScope, ServerScope, VersionKey
from kioku._domain.settings import ServerSettings
from kioku._domain.visibility import Visibility
from kioku._memory.repository import VERSIONS_SQL, version_params, versions_of
from kioku._memory.windows import MEMORY_WINDOW, MemoryWindow
from kioku._reach import (
    Reach,
    invisible_people,
    may_remember_message,
    privacy_to_look_up,
    reach_of,
    stored_full_user,
)
from kioku._search.aids import SearchAids
from kioku._search.engine import rank_candidates_steps, rank_ids_steps
from kioku._search.planning import HNSW_EF_SEARCH
from kioku._search.rows import CandidateRow
from kioku._stm.model import StmCandidate, StmEntry, StmKey
from kioku._stm.registry import (
    RECENT_COLUMNS,
    RECENT_SQL,
    THREAD_VERSION_SQL,
    RecentThreads,
    StmRegistry,
)
from kioku._stm.store import ShortTermMemory


@dataclass(frozen=True)
class TurnState:
    """What a build checks first, read in one round trip."""

    settings: ServerSettings
    versions: Mapping[VersionKey, int | None]
    """Versions of every memory scope the turn could show (personal memories enabled or
    not); a scope never written has none."""
    channel_version: datetime | None
    """``last_updated`` of this channel's short-term memory (``None``: none yet)."""
    recent_threads: list[StmCandidate] | None = None
    """Other channels' registry rows the turn might recall, newest first, before any
    filtering (``None``: not read)."""
    user_stored_full: bool | None = None
    """Whether kioku's directory marks the turn's own user FULL now (``None``: not read)."""
    embedder: tuple[str, int] | None = None
    """The embedder the database records (``None``: none yet, or not read)."""


_USER_FULL_SQL = (
    "EXISTS (SELECT 1 FROM users WHERE id = :turn_user "
    f"AND privacy_level = {int(PrivacyLevel.FULL)})"
)
"""Whether the directory marks the turn's user FULL (recall reads it with the turn state)."""
_TURN_STATE_COLUMNS = (
    f"s.*, {VERSIONS_SQL} AS versions, ({THREAD_VERSION_SQL}) AS channel_version, "
    f"{_USER_FULL_SQL} AS user_full, {RECORDED_EMBEDDER_SQL} AS embedder"
)
_TURN_STATE = f"SELECT {_TURN_STATE_COLUMNS} FROM {SETTINGS_SOURCE} AS s"
_TURN_STATE_WITH_THREADS = (
    f"SELECT {_TURN_STATE_COLUMNS}, recent.* FROM {SETTINGS_SOURCE} AS s CROSS JOIN (SELECT "
    + ", ".join(f"array_agg({column}) AS recent_{column}" for column in RECENT_COLUMNS)
    + f" FROM ({RECENT_SQL}) AS r) AS recent"
)
"""The turn state and the rows of :data:`RECENT_SQL`, one array per column (aggregated
together, so the arrays stay aligned)."""


def turn_state_steps(context: TurnContext, recent: RecentThreads | None = None) -> Steps[TurnState]:
    """The turn's settings, scope versions, channel entry's version and recorded embedder.

    With ``recent`` (:meth:`ShortTermMemory.recent_threads`), also the other channels'
    registry rows it selects. One statement, yielded (run it with
    :func:`kioku._db.driver.run_steps`, or send it with others).
    """
    server, personal = scopes_of(reach_of(context, personal_memories_enabled=True))
    scopes: list[ServerScope | PersonalScope] = [server, *personal.values()]
    keys = [k for scope in scopes for k in scope.version_keys()]
    [row] = yield Named(
        _TURN_STATE if recent is None else _TURN_STATE_WITH_THREADS,
        {
            **settings_params(context.memory_server_key, context.is_dm),
            **version_params(keys),
            "thread": same_channel_key(context).thread_id,
            "turn_user": context.user.user_id,
            **(recent.params() if recent is not None else {}),
        },
    )
    threads = (
        recent.candidates(
            zip(
                *(getattr(row, f"recent_{column}") or () for column in RECENT_COLUMNS),
                strict=True,
            )
        )
        if recent is not None
        else None
    )
    return TurnState(
        settings_from_row(row),
        versions_of(keys, row.versions),
        row.channel_version,
        threads,
        row.user_full,
        readable_embedder(row.embedder),
    )


def scopes_of(reach: Reach) -> tuple[ServerScope, dict[str, PersonalScope]]:
    server = ServerScope(reach.server_key, reach.lineage_id)
    return server, {user: PersonalScope(user, reach.lineage_id) for user in reach.visible_owners}


@dataclass(frozen=True)
class LoadedMemories:
    """The memory windows a build renders: the server's and each shown person's."""

    server: MemoryWindow
    personal: dict[str, MemoryWindow]


def load_memories(
    session: Session, store: KiokuDeps, reach: Reach, state: TurnState | None = None
) -> LoadedMemories:
    """The server's memories and those of the people the turn shows (:mod:`kioku._reach`).

    The newest of each scope, and totals: cached, checked against the database's scope
    versions (``state``'s, else read in one query).
    """
    server, personal = scopes_of(reach)
    windows = store.windows.windows(
        session, [server, *personal.values()], state.versions if state is not None else None
    )
    return LoadedMemories(
        windows[server], {user: windows[scope] for user, scope in personal.items()}
    )


def load_other_channel_entries(
    session: Session,
    store: KiokuDeps,
    stm: ShortTermMemory,
    context: TurnContext,
    settings: ServerSettings,
    state: TurnState | None = None,
) -> list[StmEntry]:
    """Recallable entries of other channels, privacy-filtered, newest first, capped.

    The registry rows come from ``state`` when it read them, else from a query of their own.

    Messages of FULL-privacy people — the turn's, and anyone kioku's directory knows as
    FULL now — are left out (:func:`kioku._reach.may_remember_message`), and with them
    the entry's summary.
    """
    candidates = (
        stm.recallable(context, state.recent_threads)
        if state is not None and state.recent_threads is not None
        else stm.candidates(context, session=session)  # the opt-in read with them
    )
    if not candidates:
        return []
    settings_by_server = {context.server_id or "": settings}
    accounts = AccountRepository(session)
    for server_id in {c.server_id for c in candidates if c.server_id is not None}:
        if server_id not in settings_by_server:
            settings_by_server[server_id] = accounts.server_settings(server_id)
    chosen = select_other_channels(
        candidates, context, settings_by_server, limit=store.settings.stm_max_other_channels
    )
    loaded = stm.load_versions([(c.key, c.last_updated) for c in chosen], session)
    entries = [e for e in loaded if e is not None]
    owners = {m.user_id for e in entries for m in e.messages if m.user_id is not None}
    owners.update(speaker for e in entries for speaker in e.speakers)
    known = state.user_stored_full if state is not None else None
    stored = AccountRepository(session).invisible_among(
        privacy_to_look_up(context, owners, user_stored_full=known)
    )
    hidden = invisible_people(context) | stored | stored_full_user(context, known)
    recalled = [_without_hidden(e, hidden) for e in entries]
    return [e for e in recalled if e.messages or e.summary]


def _without_hidden(entry: StmEntry, hidden: frozenset[str]) -> StmEntry:
    """``entry`` without the messages of ``hidden`` people.

    Its summary goes too when any of them spoke in the entry (their messages may have
    scrolled out since): it may retell what they said.
    """
    kept = tuple(
        m
        for m in entry.messages
        if may_remember_message(m.user_id, marked_private=False, invisible=hidden)
    )
    spoke = any(speaker in hidden for speaker in entry.speakers)
    if len(kept) == len(entry.messages) and not spoke:
        return entry
    return replace(entry, messages=kept, summary=None)


def same_channel_key(context: TurnContext) -> StmKey:
    """The entry rendered as this channel's memory: the server's, or the user's in a DM."""
    if context.server_id is None:
        return StmKey("user", context.user.user_id, context.channel_id, context.persona.lineage_id)
    return StmKey("server", context.server_id, context.channel_id, context.persona.lineage_id)


def load_same_channel_entry(
    session: Session, stm: ShortTermMemory, context: TurnContext, state: TurnState | None = None
) -> StmEntry | None:
    """This channel's unexpired entry, if any (its version from ``state``, else read)."""
    key = same_channel_key(context)
    version = (
        state.channel_version if state is not None else StmRegistry(session).version(key.thread_id)
    )
    if version is None:
        return None
    entry = stm.load_version(key, version, session)
    if entry is None or stm.policy.is_expired(entry, stm.clock()):
        return None
    return entry


@dataclass(frozen=True)
class RankingNeed:
    """A memory block that overflows: which memories to rank, how many, what it holds."""

    visibility: Visibility
    count: int
    held: tuple[MemoryWindow, ...]
    """The windows the block renders from: rows of the ranked memories they lack are read."""


Ranked = tuple[list[int], list[CandidateRow]]
"""Ids most relevant first, and the rows of those the block's windows lack."""


def ranking_steps(
    session: Session,
    store: KiokuDeps,
    need: RankingNeed,
    query: str,
    vector: list[float] | None,
    now: datetime,
) -> Steps[Ranked]:
    """:data:`Ranked` for ``need``, its statements yielded (run several together).

    When the windows hold every memory in reach, only ids and what ranks them are read
    (a memory saved since it was loaded shows from the next turn).
    """
    if not query.strip():
        return [], []
    options = _ranked(store, need.count, now)
    if all(len(window.records) >= window.total for window in need.held):
        ids = yield from rank_ids_steps(
            session, need.visibility, query, vector, limit=need.count, **options
        )
        return ids, []
    ranking = yield from rank_candidates_steps(
        session, need.visibility, query, vector, limit=need.count, **options
    )
    rows = ranking.best(need.count)
    return [row.id for row in rows], rows


def send_ahead(
    store: KiokuDeps,
    build: Session,
    need: RankingNeed,
    query: str,
    vector: list[float] | None,
    now: datetime,
) -> SentAhead[Ranked] | None:
    """``need``'s ranking sent now on an idle pooled connection, its rows read later.

    ``None`` when the pool has no idle connection, or when the ``build``'s session does
    not reach PostgreSQL directly. Waiting for a connection while the build holds another
    could wait out the pool's timeout when many builds run at once; behind a pooler, the
    statement sent ahead holds a server session until its rows are read, so builds at
    once could each hold one while waiting for another for their own round trip.
    """
    if not reaches_server(build.connection().info) or not idle_connection(store.engine):
        return None
    own = ExitStack()
    session = own.enter_context(store.reads())
    try:
        return SentAhead.send(
            session, ranking_steps(session, store, need, query, vector, now), own.close
        )
    except BaseException:
        own.close()
        raise


class _RankingOptions(TypedDict):
    now: datetime
    candidates: int
    aids: SearchAids
    floor: RelevanceFloor | None


def _ranked(store: KiokuDeps, count: int, now: datetime) -> _RankingOptions:
    """How the context build ranks at ``now``: ``count`` candidates per search, the floor."""
    return {
        "now": now,
        "candidates": count,
        "aids": store.search_aids,
        "floor": relevance_floor(
            store.embedder.model, store.settings.relevance_similarity
        ),
    }


def wanted(total: int, omitted: int) -> int:
    """How many memories to rank: a few more than the block showed, at most the window.

    The few more stop at what one HNSW walk collects (``hnsw.ef_search``): past that, a
    large scope's index search walks again, which cost 1.5 ms of a 15 ms turn at 10,000
    memories per scope, to rank memories the block has no room for.
    """
    shown = max(0, total - omitted)
    return min(total, MEMORY_WINDOW, shown + shown // 4 + 5, max(shown, HNSW_EF_SEARCH))


def missing_from(
    loaded: Sequence[MemoryRecord], found: Sequence[CandidateRow]
) -> list[MemoryRecord]:
    """The retrieved memories that ``loaded`` lacks, as records."""
    have = {m.id for m in loaded}
    return [
        MemoryRecord(
            hit.id,
            hit.scope,
            hit.server_id,
            hit.user_id,
            hit.persona_lineage_id,
            hit.content,
            hit.created_at,
            hit.updated_at,
            hit.event_time,
            hit.happened_at,
            hit.memory_type,
        )
        for hit in found
        if hit.id not in have
    ]
