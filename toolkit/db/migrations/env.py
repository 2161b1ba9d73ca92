"""Alembic environment: runs on the connection kioku's ``setup()`` hands over."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from toolkit.db.models import Base

config = context.config
target_metadata = Base.metadata
VERSION_TABLE = "kioku_alembic_version"


def _include_object(
    obj: object, name: str | None, type_: str, reflected: bool, compare_to: object
) -> bool:
    # Other libraries (LangGraph's checkpointer) share the database: only compare our tables.
    return not (type_ == "table" and reflected and compare_to is None)


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is None:
        engine = create_engine(config.get_main_option("sqlalchemy.url") or "")
        with engine.begin() as conn:
            _run(conn)
        engine.dispose()
    else:
        _run(connection)


def _run(connection: object) -> None:
    context.configure(
        connection=connection,  # type: ignore[arg-type]
        target_metadata=target_metadata,
        version_table=VERSION_TABLE,
        include_object=_include_object,
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


run_migrations_online()
