"""Engine creation and the pgvector check."""

from __future__ import annotations

from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError

from toolkit.db.errors import describe
from toolkit.errors import DatabaseUnavailableError

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


def make_engine(url: str, *, pool_size: int = 10) -> Engine:
    """Create a pooled engine that survives server restarts (pre-ping)."""
    return create_engine(
        normalise_url(url),
        pool_size=pool_size,
        max_overflow=pool_size,
        pool_pre_ping=True,
        pool_timeout=10,
    )


def check_pgvector(engine: Engine) -> None:
    """Fail fast unless the server is reachable and offers pgvector.

    Raises:
        DatabaseUnavailableError: with a message that says how to fix it.
    """
    try:
        with engine.connect() as connection:
            available = connection.execute(
                text("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
            ).first()
    except SQLAlchemyError as exc:
        raise DatabaseUnavailableError(
            f"Cannot connect to PostgreSQL at {engine.url.render_as_string()}: "
            f"{describe(exc)}. Check KIOKU_DATABASE_URL, or unset it to use the "
            "embedded server."
        ) from exc
    if available is None:
        raise DatabaseUnavailableError(_PGVECTOR_HELP)
