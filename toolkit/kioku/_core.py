"""``KiokuCore``: the store's database side: its dependencies, schema, checkpointer, close.

It builds the :class:`~kioku._deps.KiokuDeps` the flows receive and offers their parts
under the names applications know (``store.sessions``, ``store.settings``, …).
:class:`kioku.KiokuStore` (``_store.py``) adds what sits above the flows: opening from
settings, short-term memory, the sweeper, erasure and consolidation.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any, Self

from langgraph.checkpoint.postgres import PostgresSaver
from psycopg_pool import ConnectionPool
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from kioku._accounts import AccountRepository
from kioku._config import KiokuSettings, load_settings
from kioku._db.checkpoint_pool import checkpoint_pool
from kioku._db.embedded import EmbeddedPostgres
from kioku._db.engine import libpq_url
from kioku._db.saver import PostgresSaverForBoth
from kioku._db.schema import SchemaChange, serialised_setup, upgrade_schema
from kioku._db.vectors import EXACT_SEARCH_MAX_ROWS, ensure_vector_schema
from kioku._deps import KiokuDeps
from kioku._domain.records import MemoryRecord
from kioku._embeddings import EmbedderSpec, embedder_from_settings
from kioku._memory.cache import ScopeCache
from kioku._memory.directory import UserDirectory
from kioku._memory.repository import MemoryRepository
from kioku._memory.windows import CacheKey, MemoryWindow
from kioku._search.access import AccessRecorder
from kioku._search.aids import SearchAids

if TYPE_CHECKING:
    from kioku._db.models import MemoryHistory

logger = logging.getLogger(__name__)


class KiokuCore:
    """Owns the engines: builds the flows' dependencies (:attr:`deps`), sets up, closes.

    Flows, short-term memory, erasure, the sweeper and the context build receive
    :attr:`deps`, never this object.
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
        settings = settings or load_settings()
        self.deps = KiokuDeps.build(
            engine, settings, embedder or embedder_from_settings(settings), directory
        )
        """What the flows receive (:class:`~kioku._deps.KiokuDeps`)."""
        self.embedded = embedded
        self._checkpointer: PostgresSaver | None = None
        self._checkpoint_pool: ConnectionPool[Any] | None = None
        self._checkpointer_lock = threading.Lock()

    # the dependencies' parts, as applications and tests know them -------------------------

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine."""
        return self.deps.engine

    @property
    def settings(self) -> KiokuSettings:
        """The settings (assignable: every part holding the dependencies sees the new ones)."""
        return self.deps.settings

    @settings.setter
    def settings(self, settings: KiokuSettings) -> None:
        self.deps.settings = settings

    @property
    def embedder(self) -> EmbedderSpec:
        """The embedder every write path uses (``KIOKU_EMBEDDINGS``)."""
        return self.deps.embedder

    @property
    def directory(self) -> UserDirectory | None:
        """The application's directory; ``None`` uses kioku's own tables."""
        return self.deps.directory

    @property
    def sessions(self) -> sessionmaker[Session]:
        """Sessions on the engine."""
        return self.deps.sessions

    @property
    def reads(self) -> sessionmaker[Session]:
        """Sessions for reads only: each statement on its own, no BEGIN or ROLLBACK sent."""
        return self.deps.reads

    @property
    def cache(self) -> ScopeCache[CacheKey, MemoryWindow]:
        """Each scope's newest memories, cached by version."""
        return self.deps.windows.cache

    @property
    def search_aids(self) -> SearchAids:
        """Scope sizes and word statistics remembered between searches."""
        return self.deps.search_aids

    @search_aids.setter
    def search_aids(self, aids: SearchAids) -> None:
        self.deps.search_aids = aids

    @property
    def access(self) -> AccessRecorder:
        """Batched access counts of memories returned by search."""
        return self.deps.access

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

    def transaction(self) -> AbstractContextManager[Session]:
        """A session inside one transaction, committed on success."""
        return self.deps.transaction()

    @contextmanager
    def accounts(self) -> Iterator[AccountRepository]:
        """Administer servers, users, members and personas in one transaction."""
        with self.transaction() as session:
            yield AccountRepository(session)

    def memory_window(self, scope: CacheKey) -> MemoryWindow:
        """The newest active memories of ``scope`` and their total.

        At most ``MEMORY_WINDOW`` are loaded; a scope within the window is loaded whole.
        """
        return self.deps.windows.window(scope)

    def memory_history(self, memory_id: int) -> Sequence[MemoryHistory]:
        """Every change to memory ``memory_id``, oldest first (kept after a delete)."""
        with self.sessions() as session:
            return MemoryRepository(session).history(memory_id)

    def memories(self, scope: CacheKey) -> list[MemoryRecord]:
        """Active memories of ``scope``, newest first: at most ``MEMORY_WINDOW`` of them.

        A new list each call: changing it changes nothing kept.
        """
        return list(self.memory_window(scope).records)
