"""Apply kioku's Alembic migrations: idempotent and safe across processes."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, text

_MIGRATIONS = Path(__file__).with_name("migrations")
_SETUP_LOCK_KEY = 0x6B696F6B75  # "kioku": serialises concurrent setup() calls


def alembic_config(engine: Engine) -> Config:
    """Return an Alembic config pointing at the migrations inside the package."""
    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    config.set_main_option(
        "sqlalchemy.url", engine.url.render_as_string(hide_password=False).replace("%", "%%")
    )
    return config


def upgrade_schema(engine: Engine) -> None:
    """Bring the schema to the newest revision.

    Holds a transaction-scoped advisory lock, so two processes running this at once
    apply the migrations once; running it again is a no-op.
    """
    config = alembic_config(engine)
    with engine.begin() as connection:
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _SETUP_LOCK_KEY})
        config.attributes["connection"] = connection
        command.upgrade(config, "head")
