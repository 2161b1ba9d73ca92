"""Alembic environment: runs on the connection kioku's ``setup()`` hands over."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from kioku._db.models import Base
from kioku._db.vectors import HNSW_INDEXES, SCOPE_VECTOR_INDEXES

config = context.config
target_metadata = Base.metadata
VERSION_TABLE = "kioku_alembic_version"


RUNTIME_INDEXES = frozenset({*HNSW_INDEXES.values(), *SCOPE_VECTOR_INDEXES})
"""Indexes ``setup()`` creates from the configured embedder, not from the models."""


def _compare_type(
    context: object,
    inspected: object,
    metadata: object,
    inspected_type: object,
    metadata_type: object,
) -> bool | None:
    # The embedding column's dimension is set at run time from the embedder.
    if getattr(metadata, "name", None) == "embedding":
        return False
    return None


def _include_object(
    obj: object, name: str | None, type_: str, reflected: bool, compare_to: object
) -> bool:
    # Other libraries (LangGraph's checkpointer) share the database: only compare our tables.
    if type_ == "index" and name in RUNTIME_INDEXES:
        return False
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
        compare_type=_compare_type,
    )
    with context.begin_transaction():
        context.run_migrations()


run_migrations_online()
