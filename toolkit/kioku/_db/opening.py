"""Where kioku's database is: ``KIOKU_DATABASE_URL``, or the embedded server started for it.

Needs neither LangChain nor an embedder, so operator commands that only read
(``kioku memories list``) open the database through this alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from kioku._config import KiokuSettings
from kioku._db.embedded import EmbeddedPostgres
from kioku._db.engine import make_engine


@dataclass(frozen=True)
class OpenDatabase:
    """An engine on kioku's database, and the embedded server when this started one."""

    engine: Engine
    embedded: EmbeddedPostgres | None

    def close(self) -> None:
        """Dispose of the pooled connections; stop the embedded server if this started it."""
        self.engine.dispose()
        if self.embedded is not None:
            self.embedded.stop()


def open_database(settings: KiokuSettings) -> OpenDatabase:
    """Connect to ``settings.database_url``, or start the embedded server when it is unset.

    Raises:
        ConfigurationError: the database cannot be reached or started; the message says why.
    """
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
    return OpenDatabase(engine, embedded)


def autocommit_engine(engine: Engine) -> Engine:
    """``engine`` with every statement committed on its own (no ``BEGIN`` sent)."""
    return engine.execution_options(isolation_level="AUTOCOMMIT")


def read_sessions(engine: Engine) -> sessionmaker[Session]:
    """Sessions for reads only: each statement on its own, no ``BEGIN`` or ``ROLLBACK`` sent."""
    return sessionmaker(autocommit_engine(engine), expire_on_commit=False)
