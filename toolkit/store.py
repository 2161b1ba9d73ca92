"""``KiokuStore``: the database, its sessions, the memory cache and the directory."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from toolkit.accounts import AccountRepository
from toolkit.config import KiokuSettings, load_settings
from toolkit.db.embedded import EmbeddedPostgres
from toolkit.db.engine import check_pgvector, make_engine
from toolkit.db.schema import upgrade_schema
from toolkit.memory.cache import ScopeCache
from toolkit.memory.directory import DatabaseUserDirectory, UserDirectory
from toolkit.memory.repository import (
    MemoryRecord,
    MemoryRepository,
    PersonalScope,
    ServerScope,
)

logger = logging.getLogger(__name__)

CacheKey = ServerScope | PersonalScope


class KiokuStore:
    """Owns the engine and hands out sessions; tools and the graph share one store.

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
    ) -> None:
        """Wrap an existing engine (see :meth:`open` to create one from settings)."""
        self.engine = engine
        self.settings = settings or load_settings()
        self.embedded = embedded
        self.sessions: sessionmaker[Session] = sessionmaker(engine, expire_on_commit=False)
        self.directory: UserDirectory = directory or DatabaseUserDirectory(self.sessions)
        self.cache: ScopeCache[CacheKey, list[MemoryRecord]] = ScopeCache()

    @classmethod
    def open(
        cls, settings: KiokuSettings | None = None, *, directory: UserDirectory | None = None
    ) -> KiokuStore:
        """Connect to ``KIOKU_DATABASE_URL``, or start the embedded server when it is unset.

        Raises:
            ConfigurationError: when the database cannot be used; the message says why.
        """
        settings = settings or load_settings()
        embedded = None
        url = settings.database_url
        if url is None:
            embedded = EmbeddedPostgres(settings.data_dir)
            url = embedded.url
        engine = make_engine(url)
        check_pgvector(engine)
        return cls(engine, settings=settings, directory=directory, embedded=embedded)

    def setup(self) -> None:
        """Create or upgrade the schema; safe to run repeatedly and from several processes."""
        upgrade_schema(self.engine)

    def close(self) -> None:
        """Dispose of pooled connections and stop the embedded server if this started it."""
        self.engine.dispose()
        if self.embedded is not None:
            self.embedded.stop()

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

    def memories(self, scope: CacheKey) -> list[MemoryRecord]:
        """Active memories of ``scope``, newest first (cached until the next write)."""

        def load() -> list[MemoryRecord]:
            with self.sessions() as session:
                return MemoryRepository(session).list(scope)

        return self.cache.get_or_load(scope, load)

    def invalidate(self, scope: CacheKey) -> None:
        """Drop cached memories of ``scope`` (called after a committed write)."""
        if isinstance(scope, PersonalScope):
            # Personal reads of other lineages include the globals, so drop them all.
            for key in [k for k in self.cache.cached_keys() if isinstance(k, PersonalScope)]:
                if key.user_id == scope.user_id:
                    self.cache.invalidate(key)
        self.cache.invalidate(scope)
