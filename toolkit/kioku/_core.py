"""``KiokuCore``: what every flow works with (database, sessions, settings, caches).

The database, its sessions, the settings, the embedder, the directory and the memory
cache. :class:`kioku.KiokuStore` (``_store.py``) adds what sits above the flows: opening from
settings, short-term memory, the sweeper, erasure and consolidation.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Hashable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Self

from langgraph.checkpoint.postgres import PostgresSaver
from psycopg_pool import ConnectionPool
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from kioku._accounts import AccountRepository
from kioku._config import KiokuSettings, load_settings
from kioku._db.embedded import EmbeddedPostgres
from kioku._db.engine import (
    checkpoint_pool,
    libpq_url,
)
from kioku._db.saver import PostgresSaverForBoth
from kioku._db.schema import SchemaChange, serialised_setup, upgrade_schema
from kioku._db.vectors import EXACT_SEARCH_MAX_ROWS, ensure_vector_schema
from kioku._domain.records import MemoryRecord
from kioku._domain.scopes import PersonalScope, ServerScope, VersionKey
from kioku._domain.writes import ContentChange
from kioku._embeddings import EmbedderSpec, embedder_from_settings
from kioku._memory.cache import ScopeCache
from kioku._memory.directory import DatabaseUserDirectory, UserDirectory
from kioku._memory.repository import MemoryRepository
from kioku._search.access import AccessRecorder
from kioku._search.aids import SearchAids

if TYPE_CHECKING:
    from kioku._db.models import MemoryHistory

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


class KiokuCore:
    """Owns the engines and hands out sessions: the dependencies every flow receives.

    Flows, short-term memory, erasure, the sweeper and the context build take one of these
    (a :class:`kioku.KiokuStore` is one) and use nothing above it.
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
        self._checkpointer_lock = threading.Lock()

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

    def close(self) -> None:
        """Dispose of pooled connections and stop the embedded server if this started it.

        From async code, ``await store.aclose()`` does the same off the event loop.
        """
        self.access.close()
        self.engine.dispose()
        if self._checkpoint_pool is not None:
            self._checkpoint_pool.close()
            self._checkpoint_pool = None
            self._checkpointer = None
        if self.embedded is not None:
            self.embedded.stop()

    async def aclose(self) -> None:
        """:meth:`close` off the event loop (it may wait for a sweep to finish)."""
        await asyncio.to_thread(self.close)

    def __enter__(self) -> Self:
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

    def memory_history(self, memory_id: int) -> Sequence[MemoryHistory]:
        """Every change to memory ``memory_id``, oldest first (kept after a delete)."""
        with self.sessions() as session:
            return MemoryRepository(session).history(memory_id)

    def memories(self, scope: CacheKey) -> list[MemoryRecord]:
        """Active memories of ``scope``, newest first: at most ``MEMORY_WINDOW`` of them.

        A new list each call: changing it changes nothing kept.
        """
        return list(self.memory_window(scope).records)

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
