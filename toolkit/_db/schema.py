"""Apply kioku's Alembic migrations: idempotent and safe across processes."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Connection, Engine, text

from kioku._errors import DatabaseUnavailableError

_MIGRATIONS = Path(__file__).with_name("migrations")
_VERSION_TABLE = "kioku_alembic_version"  # as migrations/env.py configures it
_SETUP_LOCK_KEY = 0x6B696F6B75  # "kioku": serialises setup() across processes
UNLIMITED = text("SET LOCAL statement_timeout = 0")
"""Schema changes (index builds over many rows) may take longer than any turn's statement."""

SchemaChange = Literal["created", "upgraded", "unchanged"]
"""What :func:`upgrade_schema` did: made the schema, migrated it, or found it current."""


def alembic_config(engine: Engine) -> Config:
    """Return an Alembic config pointing at the migrations inside the package."""
    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    config.set_main_option(
        "sqlalchemy.url", engine.url.render_as_string(hide_password=False).replace("%", "%%")
    )
    return config


@contextmanager
def serialised_setup(engine: Engine, *, timeout: float = 120.0) -> Iterator[None]:
    """Hold the setup lock (session-level) while other libraries create their tables.

    The lock is polled with ``pg_try_advisory_lock`` rather than waited for: a statement
    blocked on the lock would hold a snapshot, and LangGraph's ``CREATE INDEX
    CONCURRENTLY`` in the other process would wait for it forever.

    Raises:
        DatabaseUnavailableError: when the lock is not free within ``timeout`` seconds.
    """
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        deadline = time.monotonic() + timeout
        try_lock = text("SELECT pg_try_advisory_lock(:key)")
        while not connection.execute(try_lock, {"key": _SETUP_LOCK_KEY}).scalar_one():
            if time.monotonic() > deadline:
                raise DatabaseUnavailableError(
                    f"Another process has held kioku's setup lock for {timeout:.0f} s; "
                    "is a setup() stuck? Retry once it has finished."
                )
            time.sleep(0.05)
        try:
            yield
        finally:
            connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": _SETUP_LOCK_KEY})


def upgrade_schema(engine: Engine) -> SchemaChange:
    """Bring the schema to the newest revision (a no-op when it is there already).

    Run it inside :func:`serialised_setup` when other processes may do the same.

    Returns:
        ``"created"`` on an empty database, ``"upgraded"`` when migrations ran,
        ``"unchanged"`` when the schema was at the newest revision already.
    """
    config = alembic_config(engine)
    with engine.begin() as connection:
        connection.execute(UNLIMITED)
        before = _revision(connection)
        config.attributes["connection"] = connection
        command.upgrade(config, "head")
        after = _revision(connection)
    if before is None:
        return "created"
    return "unchanged" if before == after else "upgraded"


def _revision(connection: Connection) -> str | None:
    """The schema's current Alembic revision, None before the first migration."""
    context = MigrationContext.configure(connection, opts={"version_table": _VERSION_TABLE})
    return context.get_current_revision()
