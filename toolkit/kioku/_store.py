"""``KiokuStore``: the database, its sessions, the memory cache and the directory."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Hashable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from langgraph.checkpoint.postgres import PostgresSaver
from psycopg_pool import ConnectionPool
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from kioku._accounts import AccountRepository
from kioku._config import KiokuSettings, load_settings
from kioku._db.embedded import EmbeddedPostgres
from kioku._db.engine import (
    check_pgvector,
    checkpoint_pool,
    libpq_url,
    make_engine,
)
from kioku._db.saver import PostgresSaverForBoth
from kioku._db.schema import SchemaChange, serialised_setup, upgrade_schema
from kioku._db.vectors import EXACT_SEARCH_MAX_ROWS, ensure_vector_schema, refuse_other_embedder
from kioku._domain.records import MemoryRecord
from kioku._domain.scopes import PersonalScope, ServerScope, VersionKey
from kioku._embeddings import EmbedderSpec, embedder_from_settings
from kioku._memory.cache import ScopeCache
from kioku._memory.directory import DatabaseUserDirectory, UserDirectory
from kioku._memory.repository import ContentChange, MemoryRepository
from kioku._search.access import AccessRecorder
from kioku._search.aids import SearchAids

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from kioku._consolidation.report import ConsolidationReport
    from kioku._consolidation.saved import SavedPlan
    from kioku._context import TurnContext
    from kioku._db.models import MemoryHistory
    from kioku._erasure import ErasureReceipt
    from kioku._stm.store import ShortTermMemory
    from kioku._sweeper import SweepTimer

logger = logging.getLogger(__name__)

CacheKey = ServerScope | PersonalScope

MEMORY_WINDOW = 200
"""Memories of one scope a context build loads, newest first. More than a block's token
budget holds (2,000 tokens), so a scope within it is loaded whole; larger scopes (limits
raised far above the default 100) are rendered from the window plus the most relevant
memories found by search, and never loaded whole."""


@dataclass(frozen=True)
class MemoryWindow:
    """The newest memories of a scope and how many the scope holds (shared: not changed)."""

    records: tuple[MemoryRecord, ...]
    total: int


class KiokuStore:
    """Owns the engines and hands out sessions; tools and the graph share one store.

    Example:
        ```python
        store = KiokuStore.open()   # embedded PostgreSQL unless KIOKU_DATABASE_URL is set
        store.setup()               # apply migrations (idempotent)
        ```
    """

    def __init__(
        self,
        engine: Engine,
        *,
        settings: KiokuSettings | None = None,
        directory: UserDirectory | None = None,
        embedded: EmbeddedPostgres | None = None,
        embedder: EmbedderSpec | None = None,
    ) -> None:
        """Wrap an existing engine (see :meth:`open` to create one from settings)."""
        self.engine = engine
        self.settings = settings or load_settings()
        self.embedder = embedder or embedder_from_settings(self.settings)
        """The embedder every write path uses (``KIOKU_EMBEDDINGS``)."""
        self.embedded = embedded
        self.sessions: sessionmaker[Session] = sessionmaker(engine, expire_on_commit=False)
        self.autocommit_engine = engine.execution_options(isolation_level="AUTOCOMMIT")
        """The engine's pool, each statement committed on its own (no BEGIN sent)."""
        self.reads: sessionmaker[Session] = sessionmaker(
            self.autocommit_engine, expire_on_commit=False
        )
        """Sessions for reads only: each statement on its own, no BEGIN or ROLLBACK sent."""
        self.directory = directory
        """The application's directory; ``None`` uses kioku's own tables."""
        self.cache: ScopeCache[CacheKey, MemoryWindow] = ScopeCache()
        self.search_aids = SearchAids()
        """Scope sizes and word statistics remembered between searches."""
        self.access = AccessRecorder(self.sessions)
        """Batched access counts of memories returned by search."""
        self._checkpointer: PostgresSaver | None = None
        self._checkpoint_pool: ConnectionPool[Any] | None = None
        self._sweeper: SweepTimer | None = None
        self._checkpointer_lock = threading.Lock()
        self._short_term: ShortTermMemory | None = None

    @classmethod
    def open(
        cls,
        settings: KiokuSettings | None = None,
        *,
        directory: UserDirectory | None = None,
        embedder: EmbedderSpec | None = None,
        check_embedder: bool = True,
    ) -> KiokuStore:
        """Connect to ``KIOKU_DATABASE_URL``, or start the embedded server when it is unset.

        Args:
            settings: default: read from the environment.
            directory: where names are resolved (default: the database's users).
            embedder: default: ``KIOKU_EMBEDDINGS``'s.
            check_embedder: refuse an embedder other than the one the stored vectors come
                from (only ``kioku reembed``, which switches embedders, turns this off).

        Raises:
            ConfigurationError: when the database cannot be used, or holds vectors of
                another embedder; the message says why.
        """
        settings = settings or load_settings()
        embedded = None
        url = settings.database_url
        if url is None:
            embedded = EmbeddedPostgres(settings.data_dir, os_user=settings.embedded_user)
            url = embedded.url
        engine = make_engine(
            url,
            statement_timeout_ms=settings.statement_timeout_ms,
            prepared_statements=settings.prepared_statements,
        )
        check_pgvector(engine)
        store = cls(
            engine, settings=settings, directory=directory, embedded=embedded, embedder=embedder
        )
        if check_embedder:
            try:
                with engine.connect() as connection:
                    spec = store.embedder
                    refuse_other_embedder(connection, spec.model, spec.dimension)
            except BaseException:
                store.close()
                raise
        return store

    def setup(self) -> SchemaChange:
        """Create or upgrade the schema; safe to run repeatedly and from several processes.

        Also creates LangGraph's checkpoint tables, for :meth:`checkpointer`.

        Returns:
            What happened to kioku's schema: ``"created"``, ``"upgraded"`` or ``"unchanged"``.
        """
        with serialised_setup(self.engine):
            change = upgrade_schema(self.engine)
            with self.engine.begin() as connection:
                ensure_vector_schema(
                    connection,
                    self.embedder.model,
                    self.embedder.dimension,
                    hnsw=self.settings.wants_hnsw_index(EXACT_SEARCH_MAX_ROWS),
                    limits=self.settings.memory_limits,
                )
            self.checkpointer().setup()
        return change

    def checkpointer(self) -> PostgresSaver:
        """LangGraph's ``PostgresSaver`` on this database, pooled (made on first use).

        Its async methods work too (in a worker thread), so async graphs and agents
        (``ainvoke``/``astream``) can use it.

        Pass it to the per-turn graph or ``create_agent``: it keeps their conversation
        threads (short-term memory entries are rows of kioku's own table).
        """
        with self._checkpointer_lock:  # the sweeper and erasures may ask from other threads
            return self._make_checkpointer()

    def _make_checkpointer(self) -> PostgresSaver:
        # Its own pool: LangGraph's saver wants autocommit connections with dict rows.
        if self._checkpointer is None:
            self._checkpoint_pool = checkpoint_pool(
                libpq_url(self.engine), prepared_statements=self.settings.prepared_statements
            )
            self._checkpointer = PostgresSaverForBoth(self._checkpoint_pool)
        return self._checkpointer

    def short_term_memory(self) -> ShortTermMemory:
        """This store's short-term memory (made on first use).

        The one instance the middleware and :func:`kioku.memory_tools` share by default, so
        the summary tool and passive capture see each other's writes without a reread.
        """
        with self._checkpointer_lock:
            if self._short_term is None:
                from kioku._stm.store import ShortTermMemory

                self._short_term = ShortTermMemory(self)
            return self._short_term

    def start_sweeper(self) -> None:
        """Run the sweeper on a timer in this process (idempotent).

        Called by the per-turn graph and the MCP server, so long-lived processes keep
        checkpoints bounded and apply history retention without anyone running
        ``kioku sweep``; ``KIOKU_SWEEP_INTERVAL_MINUTES=0`` turns it off.
        """
        minutes = self.settings.sweep_interval_minutes
        if self._sweeper is not None or minutes <= 0:
            return
        from kioku._sweeper import SweepTimer

        self._sweeper = SweepTimer(self, timedelta(minutes=minutes))
        self._sweeper.start()

    def _stop_sweeper(self) -> None:
        sweeper, self._sweeper = self._sweeper, None
        if sweeper is not None:
            sweeper.stop()

    def close(self) -> None:
        """Dispose of pooled connections and stop the embedded server if this started it.

        From async code, ``await store.aclose()`` does the same off the event loop.
        """
        self._stop_sweeper()
        self.access.close()
        self.engine.dispose()
        if self._checkpoint_pool is not None:
            self._checkpoint_pool.close()
            self._checkpoint_pool = None
            self._checkpointer = None
            self._short_term = None
        if self.embedded is not None:
            self.embedded.stop()

    async def aclose(self) -> None:
        """:meth:`close` off the event loop (it may wait for a sweep to finish)."""
        await asyncio.to_thread(self.close)

    def __enter__(self) -> KiokuStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """A session inside one transaction, committed on success."""
        with self.sessions() as session, session.begin():
            yield session

    @contextmanager
    def accounts(self) -> Iterator[AccountRepository]:
        """Administer servers, users, members and personas in one transaction."""
        with self.transaction() as session:
            yield AccountRepository(session)

    def directory_for(self, session: Session) -> UserDirectory:
        """The directory to resolve names with during a unit of work in ``session``."""
        return self.directory if self.directory is not None else DatabaseUserDirectory(session)

    def memory_window(self, scope: CacheKey) -> MemoryWindow:
        """The newest active memories of ``scope`` and their total.

        At most ``MEMORY_WINDOW`` are loaded; a scope within the window is loaded whole.
        """
        with self.sessions() as session:
            return self.memory_windows(session, [scope])[scope]

    def memory_windows(
        self,
        session: Session,
        scopes: Sequence[CacheKey],
        versions: Mapping[VersionKey, int] | None = None,
    ) -> dict[CacheKey, MemoryWindow]:
        """:meth:`memory_window` of several scopes, checked for staleness in one query.

        A cached window is reused only while the scope's version in the database is the
        one it was loaded at, so writes of every process are seen at once. ``versions``
        (read in this session, e.g. with the turn's settings) spares that query.
        """
        memories = MemoryRepository(session)
        keys = {scope: scope.version_keys() for scope in scopes}
        current = (
            versions
            if versions is not None
            else memories.versions([k for ks in keys.values() for k in ks])
        )
        windows: dict[CacheKey, MemoryWindow] = {}
        for scope in scopes:
            # Versions are read before the window, so a write in between only costs a reload.
            version = tuple(current.get(key) for key in keys[scope])
            window = self.cache.get(scope, version)
            if window is None:
                records, total = memories.window(scope, MEMORY_WINDOW)
                window = MemoryWindow(tuple(records), total)
                self.cache.put(scope, version, window)
            windows[scope] = window
        return windows

    def erase_user(self, user_id: str) -> ErasureReceipt:
        """Forget everything kioku holds about ``user_id`` ("forget everything about me").

        Deletes their personal memories in every lineage, scrubs the text of their
        memories' history (tombstones keep who, when and what kind), removes their messages
        and the bot's replies to them from short-term memory and conversation threads (every
        checkpoint version), and drops their memberships and directory row.

        Returns:
            An :class:`~kioku._erasure.ErasureReceipt` with counts per kind.
        """
        from kioku._erasure import erase_user

        return erase_user(self, user_id)

    async def aerase_user(self, user_id: str) -> ErasureReceipt:
        """Async twin of :meth:`erase_user` (runs in a worker thread)."""
        return await asyncio.to_thread(self.erase_user, user_id)

    def erase_server(self, server_id: str) -> ErasureReceipt:
        """Forget everything kioku holds about a server.

        Its server-wide memories in every lineage and their history text, its channels'
        short-term memory, its members, personas and settings.
        """
        from kioku._erasure import erase_server

        return erase_server(self, server_id)

    async def aerase_server(self, server_id: str) -> ErasureReceipt:
        """Async twin of :meth:`erase_server` (runs in a worker thread)."""
        return await asyncio.to_thread(self.erase_server, server_id)

    def memory_history(self, memory_id: int) -> Sequence[MemoryHistory]:
        """Every change to memory ``memory_id``, oldest first (kept after a delete)."""
        with self.sessions() as session:
            return MemoryRepository(session).history(memory_id)

    def memories(self, scope: CacheKey) -> list[MemoryRecord]:
        """Active memories of ``scope``, newest first: at most ``MEMORY_WINDOW`` of them.

        A new list each call: changing it changes nothing kept.
        """
        return list(self.memory_window(scope).records)

    def consolidate(
        self,
        scope: CacheKey,
        model: BaseChatModel | None = None,
        *,
        apply: bool = False,
        context: TurnContext | None = None,
        plan: SavedPlan | None = None,
    ) -> ConsolidationReport:
        """Ask ``model`` once which memories of ``scope`` to merge or retire; apply if asked.

        The model sees the scope's newest memories (up to ``MEMORY_WINDOW``) as
        ``ID:N text`` data lines under ``kioku.CONSOLIDATION_PROMPT`` and answers with JSON
        merges and supersessions. Ids it was not shown, ids used twice and over-long text
        are refused (listed in the plan's ``rejected``); a reply that is not JSON gives an
        empty plan with an ``error``. A dry run (the default) changes nothing. ``apply=True``
        carries the plan out through ``update_long_term_memory``'s flow, change by change,
        so scope checks, privacy, limits, history and notices apply as to a tool call.

        To apply exactly the plan a dry run showed, pass ``plan=report.saved_plan()`` (no
        model is asked): the reply is checked again, and an action naming a memory whose
        text changed since, or that is gone, is dropped with the reason. Either way the
        scope is read again just before applying, so a memory changed while the model was
        thinking is left alone.

        Args:
            scope: a :class:`ServerScope` or :class:`PersonalScope`.
            model: any LangChain chat model. Not needed with ``plan``.
            apply: carry the plan out.
            context: the turn context to write with (default:
                ``kioku.consolidation_context(store, scope)``); it must address ``scope``.
            plan: a :class:`~kioku.SavedPlan` of an earlier dry run over ``scope``.

        Returns:
            A :class:`~kioku.ConsolidationReport`: the plan, and each change's status.

        Raises:
            ConfigurationError: ``context`` addresses other memories than ``scope``; neither
                ``model`` nor ``plan`` is given; ``plan`` is for another scope.
            ModelCallError: the model call failed or its answer was not a reply (its own
                exception is the ``__cause__``); nothing is changed.
        """
        from kioku._consolidation.run import consolidate

        return consolidate(self, scope, model, apply=apply, context=context, plan=plan)

    def applied_update(self, scope: CacheKey, change: ContentChange) -> None:
        """After ``change`` committed: apply it to ``scope``'s cached window, or drop it.

        The window is kept (at the version the change made) only when it was cached at
        the version the change replaced, so it equals what a reload would read.
        """
        keys = scope.version_keys()
        if (
            change.key not in keys
            or change.version_before is None
            or change.version_after is None
            or change.changed_at is None
        ):
            self.invalidate(scope)
            return
        at, before, after = keys.index(change.key), change.version_before, change.version_after
        changed_at = change.changed_at

        def revise(version: Hashable, window: MemoryWindow) -> tuple[Hashable, MemoryWindow] | None:
            if not isinstance(version, tuple) or version[at] != before:
                return None
            records = tuple(
                replace(r, content=change.content, updated_at=changed_at)
                if r.id == change.memory_id
                else r
                for r in window.records
            )
            return (*version[:at], after, *version[at + 1 :]), MemoryWindow(records, window.total)

        if isinstance(scope, PersonalScope):
            for key in self.cache.cached_keys():  # other lineages see it through the globals
                if isinstance(key, PersonalScope) and key.user_id == scope.user_id and key != scope:
                    self.cache.invalidate(key)
        self.cache.revise(scope, revise)

    def invalidate(self, scope: CacheKey) -> None:
        """Drop cached memories of ``scope`` (called after a committed write)."""
        if isinstance(scope, PersonalScope):
            # Personal reads of every lineage include the globals, so drop them all.
            for key in self.cache.cached_keys():
                if isinstance(key, PersonalScope) and key.user_id == scope.user_id:
                    self.cache.invalidate(key)
        self.cache.invalidate(scope)
