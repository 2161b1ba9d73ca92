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
from sqlalchemy import Connection, Engine, TextClause, text

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


def _try_lock(key: int) -> TextClause:
    """Take a transaction's advisory lock if free; the transaction may then idle while held.

    The key is written into the statement: a statement with parameters leaves its portal,
    and with it a snapshot, open until the next one, and ``CREATE INDEX CONCURRENTLY``
    (LangGraph's, while setup holds the lock) waits for every snapshot.
    """
    return text(
        "SELECT set_config('idle_in_transaction_session_timeout', '0', true), "
        f"pg_try_advisory_xact_lock({int(key)})"
    )


_POLL_SECONDS = 0.05


@contextmanager
def advisory_lock(engine: Engine, key: int, *, wait_seconds: float = 0.0) -> Iterator[bool]:
    """Hold advisory lock ``key`` while the body runs, in a transaction of its own.

    A transaction-level lock held by an open transaction, not a session-level one: behind
    a pooler in transaction mode every transaction may run in another server session, so
    a session's lock could be left held by a session nobody uses any more. The transaction
    takes no snapshot while it waits for the body (``CREATE INDEX CONCURRENTLY`` elsewhere
    does not wait for it), and the lock is polled rather than waited for: a statement
    blocked on the lock would hold one.

    Args:
        engine: where to take the lock (one pooled connection is held meanwhile).
        key: the lock's key.
        wait_seconds: how long to keep trying while another holds it.

    Yields:
        Whether the lock is held (False once ``wait_seconds`` passed without it).
    """
    with engine.connect() as connection:
        deadline = time.monotonic() + wait_seconds
        while True:
            transaction = connection.begin()
            if connection.execute(_try_lock(key)).one()[1]:
                break
            transaction.rollback()
            if time.monotonic() >= deadline:
                yield False
                return
            time.sleep(_POLL_SECONDS)
        try:
            yield True
        finally:
            transaction.rollback()


_POOLER_WAIT_TIMEOUT = "query_wait_timeout"
"""How PgBouncer disconnects a client that waited too long for a server connection."""
_POOL_OF_ONE = (
    "setup waited out the pooler's query_wait_timeout: it holds its lock on one server "
    "connection while it migrates on another; give the pooler two per database and role "
    "(PgBouncer: default_pool_size >= 2), or run `kioku setup` with KIOKU_DATABASE_URL "
    "pointing at PostgreSQL itself"
)


@contextmanager
def serialised_setup(engine: Engine, *, timeout: float = 120.0) -> Iterator[None]:
    """Hold the setup lock (:func:`advisory_lock`) while other libraries create their tables.

    Raises:
        DatabaseUnavailableError: when the lock is not free within ``timeout`` seconds, or
            when a pooler with one server connection made the body wait out its timeout.
    """
    with advisory_lock(engine, _SETUP_LOCK_KEY, wait_seconds=timeout) as held:
        if not held:
            raise DatabaseUnavailableError(
                f"Another process has held kioku's setup lock for {timeout:.0f} s; "
                "is a setup() stuck? Retry once it has finished."
            )
        try:
            yield
        except Exception as exc:
            if _POOLER_WAIT_TIMEOUT in str(exc):
                raise DatabaseUnavailableError(_POOL_OF_ONE) from exc
            raise


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
