"""``KiokuDeps``: what the flows work with, handed to them by :class:`kioku.KiokuStore`.

Sessions, settings, the embedder, the directory and the caches; nothing above them (no
checkpointer, no short-term memory, no sweeper). Flows, short-term memory, erasure, the
sweeper, consolidation and the context build receive one of these, never the store.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Protocol

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from kioku._config import KiokuSettings
from kioku._db.opening import autocommit_engine, read_sessions
from kioku._embeddings import EmbedderSpec
from kioku._memory.directory import DatabaseUserDirectory, UserDirectory
from kioku._memory.windows import MemoryWindows
from kioku._recorded_embedder import RecordedEmbedder
from kioku._search.access import AccessRecorder
from kioku._search.aids import SearchAids


@dataclass
class KiokuDeps:
    """The database's sessions, the settings, the embedder, the directory, the caches."""

    engine: Engine
    settings: KiokuSettings
    embedder: EmbedderSpec
    """The embedder every write path uses (``KIOKU_EMBEDDINGS``)."""
    directory: UserDirectory | None
    """The application's directory; ``None`` uses kioku's own tables."""
    sessions: sessionmaker[Session]
    autocommit_engine: Engine
    """The engine's pool, each statement committed on its own (no BEGIN sent)."""
    reads: sessionmaker[Session]
    """Sessions for reads only: each statement on its own, no BEGIN or ROLLBACK sent."""
    windows: MemoryWindows
    """Each scope's newest memories, cached by version."""
    search_aids: SearchAids
    """Scope sizes and word statistics remembered between searches."""
    access: AccessRecorder
    """Batched access counts of memories returned by search."""
    recorded: RecordedEmbedder = field(default_factory=RecordedEmbedder)
    """Whether the database still records ``embedder`` (:mod:`kioku._recorded_embedder`)."""

    @classmethod
    def build(
        cls,
        engine: Engine,
        settings: KiokuSettings,
        embedder: EmbedderSpec,
        directory: UserDirectory | None = None,
    ) -> KiokuDeps:
        """The dependencies of a store on ``engine``."""
        sessions = sessionmaker(engine, expire_on_commit=False)
        return cls(
            engine=engine,
            settings=settings,
            embedder=embedder,
            directory=directory,
            sessions=sessions,
            autocommit_engine=autocommit_engine(engine),
            reads=read_sessions(engine),
            windows=MemoryWindows(sessions),
            search_aids=SearchAids(),
            access=AccessRecorder(sessions),
        )

    @property
    def deps(self) -> KiokuDeps:
        """Itself: code taking :class:`HasDeps` takes the dependencies as well as a store."""
        return self

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """A session inside one transaction, committed on success."""
        with self.sessions() as session, session.begin():
            yield session

    def directory_for(self, session: Session) -> UserDirectory:
        """The directory to resolve names with during a unit of work in ``session``."""
        return self.directory if self.directory is not None else DatabaseUserDirectory(session)


class HasDeps(Protocol):
    """A :class:`kioku.KiokuStore` or the :class:`KiokuDeps` themselves."""

    @property
    def deps(self) -> KiokuDeps:
        """The dependencies."""
        ...
