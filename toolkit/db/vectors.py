"""The embedding column's dimension and HNSW index, fixed by the configured embedder."""

from __future__ import annotations

from sqlalchemy import Connection, text

from toolkit.errors import ConfigurationError

HNSW_INDEX = "ix_memories_embedding_hnsw"
MODEL_KEY = "embedding_model"
DIMENSION_KEY = "embedding_dimension"


def stored_embedder(connection: Connection) -> tuple[str, int] | None:
    """The embedder recorded in ``kioku_meta`` (``None`` before the first setup)."""
    result = connection.execute(
        text("SELECT key, value FROM kioku_meta WHERE key IN (:m, :d)"),
        {"m": MODEL_KEY, "d": DIMENSION_KEY},
    )
    rows = {str(key): str(value) for key, value in result}
    if MODEL_KEY not in rows:
        return None
    return str(rows[MODEL_KEY]), int(rows[DIMENSION_KEY])


def ensure_vector_schema(connection: Connection, model: str, dimension: int) -> None:
    """Give the column its dimension and index on first setup; refuse a silent switch.

    Raises:
        ConfigurationError: when the database holds vectors of another embedder.
    """
    stored = stored_embedder(connection)
    if stored == (model, dimension):
        return
    if stored is not None:
        raise ConfigurationError(
            f"The memories were embedded with {stored[0]} ({stored[1]} dimensions), but the "
            f"configured embedder is {model} ({dimension}). Run `kioku reembed` to re-embed "
            "every memory with the new model, or set KIOKU_EMBEDDINGS back."
        )
    set_vector_schema(connection, model, dimension)


def set_vector_schema(connection: Connection, model: str, dimension: int) -> None:
    """(Re)type the column for ``dimension``, clearing vectors of another size, and index it."""
    connection.execute(text(f"DROP INDEX IF EXISTS {HNSW_INDEX}"))
    connection.execute(
        text(
            f"ALTER TABLE memories ALTER COLUMN embedding TYPE vector({int(dimension)}) "
            f"USING CASE WHEN vector_dims(embedding) = {int(dimension)} THEN embedding END"
        )
    )
    connection.execute(
        text(f"CREATE INDEX {HNSW_INDEX} ON memories USING hnsw (embedding vector_cosine_ops)")
    )
    for key, value in ((MODEL_KEY, model), (DIMENSION_KEY, str(dimension))):
        connection.execute(
            text(
                "INSERT INTO kioku_meta (key, value) VALUES (:k, :v) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
            ),
            {"k": key, "v": value},
        )
