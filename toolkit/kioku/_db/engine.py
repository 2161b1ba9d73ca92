"""Engine creation and the pgvector check (the checkpoint pool: :mod:`kioku._db.checkpoint_pool`).

Every connection kioku makes works behind a pooler in transaction mode (PgBouncer and
the like), where consecutive transactions of one client may run on different server
sessions: statements are prepared only on connections that reach PostgreSQL directly
(:mod:`kioku._db.direct`), nothing is set for the session once connected, the
startup options a pooler refuses are dropped, and pipelines end on their Sync
(:mod:`kioku._db.connection`).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import psycopg
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DisconnectionError, SQLAlchemyError

from kioku._config import PreparedStatements
from kioku._db.connection import PoolerSafeConnection
from kioku._db.direct import (
    OWN_THRESHOLD,
    REACHES_SERVER,
    direct,
    prepare_when_direct,
)
from kioku._db.errors import describe
from kioku._db.vectors import HNSW_SEARCH_SETTINGS, HNSW_SETTINGS_APPLIED
from kioku._errors import DatabaseUnavailableError

logger = logging.getLogger(__name__)

MIN_PGVECTOR = (0, 8)
"""Iterative index scans (filtered vector search) need pgvector 0.8."""

_PGVECTOR_HELP = (
    "kioku needs the pgvector extension (>= 0.8). Install it on the server "
    "(e.g. `apt install postgresql-NN-pgvector`, or use a managed PostgreSQL that offers "
    "`vector`), or unset KIOKU_DATABASE_URL to use the embedded server that ships it."
)


def normalise_url(url: str) -> str:
    """Return ``url`` with the psycopg 3 driver selected.

    Raises:
        DatabaseUnavailableError: when ``url`` is not a PostgreSQL URL.
    """
    try:
        parsed = make_url(url)
    except Exception as exc:
        raise DatabaseUnavailableError(
            f"KIOKU_DATABASE_URL is not a database URL ({exc}); expected "
            "postgresql://user:password@host:5432/dbname"
        ) from exc
    if parsed.get_backend_name() != "postgresql":
        raise DatabaseUnavailableError(
            f"KIOKU_DATABASE_URL must point at PostgreSQL, got {parsed.get_backend_name()!r}"
        )
    return parsed.set(drivername="postgresql+psycopg").render_as_string(hide_password=False)


ENGINE_OPTIONS: dict[str, Any] = {
    "pool_size": 10,
    "max_overflow": 10,
    "pool_timeout": 10,
    "pool_use_lifo": True,
}
"""Pool settings shared by the sync and async engines (liveness: :func:`ping_when_idle`)."""

PING_AFTER_IDLE_SECONDS = 1.0
"""A pooled connection unused for longer is pinged before it is handed out."""

_LAST_USED = "kioku_last_used"
_WITH_OPTIONS = "kioku_startup_options"
"""Key of a pooled connection's ``info``: whether it was opened with the startup options."""
_OPTIONS_REFUSED = "unsupported startup parameter"
"""How PgBouncer (in its default configuration) refuses the ``options`` startup parameter."""


DEFAULT_STATEMENT_TIMEOUT_MS = 10_000
"""A statement slower than this is cancelled and its tool call reports a database error."""


def engine_options(statement_timeout_ms: int = DEFAULT_STATEMENT_TIMEOUT_MS) -> dict[str, Any]:
    """Pool settings plus per-connection settings.

    The statement timeout (``0`` disables it), UTC as the session's time zone (times come
    back as UTC datetimes whatever the server's zone; ``PGTZ`` overrides startup options,
    so pair the engine with :func:`in_utc_sessions` too), and kioku's HNSW search
    settings (pair the engine with :func:`mark_search_settings`), all sent as startup
    options (pair the engine with :func:`options_when_accepted` for poolers that refuse
    them); and no prepared statements, which a pooler in transaction mode cannot carry
    from one transaction to the next (:func:`prepared_when_direct` lets connections that
    reach the server directly prepare them).
    """
    settings = {
        "statement_timeout": str(int(statement_timeout_ms)),
        "TimeZone": "UTC",
        **HNSW_SEARCH_SETTINGS,
    }
    return {
        **ENGINE_OPTIONS,
        "connect_args": {
            "options": " ".join(f"-c {k}={v}" for k, v in settings.items()),
            "prepare_threshold": None,
        },
    }


def options_when_accepted(engine: Engine) -> Engine:
    """Open :class:`PoolerSafeConnection` objects, without startup options once refused.

    PgBouncer refuses unknown startup parameters (unless told to ignore them): the first
    refusal is remembered for the engine, and it connects without them from then on. Its
    connections then have the role's settings (see docs/deployment.md):
    :func:`mark_search_settings` and :func:`in_utc_sessions` check what they have.
    """
    refused = threading.Event()

    def connect(dialect: Any, record: Any, cargs: Any, cparams: dict[str, Any]) -> Any:
        if not refused.is_set():
            try:
                connection = PoolerSafeConnection.connect(*cargs, **cparams)
            except psycopg.OperationalError as exc:
                if _OPTIONS_REFUSED not in str(exc):
                    raise
                refused.set()
                logger.info("kioku: the server refused startup options; connecting without them")
            else:
                record.info[_WITH_OPTIONS] = True
                return connection
        record.info[_WITH_OPTIONS] = False
        without = {k: v for k, v in cparams.items() if k != "options"}
        return PoolerSafeConnection.connect(*cargs, **without)

    event.listen(engine, "do_connect", connect)
    return engine


def _with_options(record: Any) -> bool:
    return bool(record.info.get(_WITH_OPTIONS, True))


def mark_search_settings(engine: Engine) -> Engine:
    """Mark each new connection of ``engine`` that carries the HNSW search settings.

    For engines made with :func:`engine_options`: searches then skip setting them. A
    connection opened without the startup options carries them when its role does.
    """

    def mark(dbapi_connection: Any, record: Any) -> None:
        record.info[HNSW_SETTINGS_APPLIED] = _with_options(record) or _role_has_search_settings(
            dbapi_connection
        )

    event.listen(engine, "connect", mark)
    return engine


def in_utc_sessions(engine: Engine) -> Engine:
    """Make each new connection of ``engine`` use UTC as its session time zone.

    :func:`engine_options` asks for it at connect; ``PGTZ`` in the environment still wins
    there (libpq sends it after the options), so a connection that reports another zone
    sets UTC once, before first use. A connection opened without the options may be one
    of a pooler's clients, whose session settings would reach other clients: it keeps
    the role's zone (times still come back as the same instants).
    """

    def to_utc(dbapi_connection: Any, record: Any) -> None:
        if dbapi_connection.info.parameter_status("TimeZone") == "UTC" or not _with_options(record):
            return
        with dbapi_connection.cursor() as cursor:
            cursor.execute("SET TimeZone TO 'UTC'")
        dbapi_connection.commit()

    event.listen(engine, "connect", to_utc)
    return engine


def prepared_when_direct(engine: Engine, mode: PreparedStatements = "auto") -> Engine:
    """Let each new connection of ``engine`` prepare statements when ``mode`` allows it.

    Each new connection is told apart as reaching PostgreSQL directly or not (noted in
    its ``info``, :func:`kioku._db.direct.reaches_server`): a connection the server
    refused the startup options to is a pooler's (PgBouncer's way); any other asks the
    server how it sees the connection (:func:`kioku._db.direct.reaches_server_directly`).
    Under ``auto``, only a direct one prepares.
    """

    def decide(dbapi_connection: Any, record: Any) -> None:
        reaches = _with_options(record) and direct(dbapi_connection)
        record.info[REACHES_SERVER] = reaches
        prepare_when_direct(dbapi_connection, mode, OWN_THRESHOLD, reaches=reaches)

    event.listen(engine, "connect", decide)
    return engine


def ping_when_idle(engine: Engine, idle_seconds: float = PING_AFTER_IDLE_SECONDS) -> Engine:
    """Check a pooled connection on checkout once it has been idle for ``idle_seconds``.

    ``pool_pre_ping`` pings on every checkout: a round trip per unit of work, a tenth of
    a memory write. Connections idle for a while (where a restarted server or a network
    timeout leaves dead ones) are still pinged, and a dead one is replaced before use;
    one that died within the last ``idle_seconds`` fails its statement instead, which
    the tools report as a database error, and the pool then replaces every older one.
    """

    def stamp(dbapi_connection: Any, record: Any, *_: Any) -> None:
        record.info[_LAST_USED] = time.monotonic()

    def check(dbapi_connection: Any, record: Any, proxy: Any) -> None:
        if time.monotonic() - record.info.get(_LAST_USED, 0.0) < idle_seconds:
            return
        try:
            engine.dialect.do_ping(dbapi_connection)
        except Exception as exc:
            raise DisconnectionError(f"stale pooled connection ({exc})") from exc

    event.listen(engine, "connect", stamp)
    event.listen(engine, "checkin", stamp)
    event.listen(engine, "checkout", check)
    return engine


def make_engine(
    url: str,
    *,
    pool_size: int = 10,
    statement_timeout_ms: int = DEFAULT_STATEMENT_TIMEOUT_MS,
    prepared_statements: PreparedStatements = "auto",
) -> Engine:
    """Create a pooled engine that survives server restarts (:func:`ping_when_idle`).

    Every statement is cancelled after ``statement_timeout_ms`` (schema setup lifts
    the limit for its own transaction); statements are prepared as
    ``prepared_statements`` says (:func:`prepared_when_direct`).
    """
    options = {
        **engine_options(statement_timeout_ms),
        "pool_size": pool_size,
        "max_overflow": pool_size,
    }
    engine = create_engine(normalise_url(url), **options)
    engine = ping_when_idle(options_when_accepted(engine))
    return prepared_when_direct(mark_search_settings(in_utc_sessions(engine)), prepared_statements)


_ROLE_SEARCH_SETTINGS = "SELECT " + " AND ".join(
    f"current_setting('{name}', true) IS NOT DISTINCT FROM '{value}'"
    for name, value in HNSW_SEARCH_SETTINGS.items()
)


def _role_has_search_settings(dbapi_connection: Any) -> bool:
    """Whether the connection's role (or database) sets kioku's HNSW search settings."""
    with dbapi_connection.cursor() as cursor:
        cursor.execute(_ROLE_SEARCH_SETTINGS)
        row = cursor.fetchone()
    dbapi_connection.commit()
    return bool(row and row[0])


def check_pgvector(engine: Engine) -> None:
    """Fail fast unless the server is reachable and offers pgvector.

    Raises:
        DatabaseUnavailableError: with a message that says how to fix it.
    """
    try:
        with engine.connect() as connection:
            row = connection.execute(
                text(
                    "SELECT coalesce(installed_version, default_version) "
                    "FROM pg_available_extensions WHERE name = 'vector'"
                )
            ).first()
    except SQLAlchemyError as exc:
        raise unreachable(engine, exc) from exc
    if row is None:
        raise DatabaseUnavailableError(_PGVECTOR_HELP)
    if version_tuple(str(row[0])) < MIN_PGVECTOR:
        raise DatabaseUnavailableError(f"The server offers pgvector {row[0]}. {_PGVECTOR_HELP}")


def unreachable(engine: Engine, exc: SQLAlchemyError) -> DatabaseUnavailableError:
    """The error saying ``engine``'s server could not be reached, and what to check."""
    return DatabaseUnavailableError(
        f"Cannot connect to PostgreSQL at {engine.url.render_as_string()}: "
        f"{describe(exc)}. Check KIOKU_DATABASE_URL, or unset it to use the embedded server."
    )


def version_tuple(version: str) -> tuple[int, ...]:
    """``"0.8.1"`` → ``(0, 8, 1)``; non-numeric parts count as 0."""
    return tuple(int(part) if part.isdigit() else 0 for part in version.split("."))


def libpq_url(engine: Engine) -> str:
    """The engine's URL as psycopg/libpq expects it (no SQLAlchemy driver suffix)."""
    return engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
