"""The embedding column's dimension and HNSW index, fixed by the configured embedder."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Literal

from sqlalchemy import Connection, text

from kioku._errors import EmbedderMismatchError
from kioku._search.planning import HNSW_EF_SEARCH

HNSW_INDEXES = {
    "server": "ix_memories_embedding_hnsw",
    "personal": "ix_memories_personal_embedding_hnsw",
}
"""An HNSW index per scope kind, each over that kind's memories alone: a search filters by
scope, so a walk through one index over every memory spent about half its visits on rows
of the other kind (at 10,000 memories per scope a context build's 100 candidates took two
walks, 2.3 ms, where its own kind's index takes one, 0.6 ms). The server index's name is
the one a single index over every memory had before (kept as it is, :func:`hnsw_cover`)."""
EXACT_SEARCH_MAX_ROWS = 2_000
"""Scopes up to this many memories are always searched exactly, from the covering scope
indexes (up to this size exact search is fast, loses nothing, keeps a scope's results
independent of other scopes, and costs writes nothing); larger ones through their kind's
HNSW index when it visits far fewer rows than an exact scan reads
(``kioku._search.planning``). Limits at or below it build no HNSW index. An exact scan
costs about a microsecond a row (filter and distance); a walk of a kind's own index for a
context build's 100 candidates about 0.6 ms (384 dimensions, 10,000 per scope; 1.5 to
2.3 ms when one index held both kinds, when this limit was set where the two met)."""
HNSW_SEARCH_SETTINGS = {
    "hnsw.iterative_scan": "relaxed_order",
    "hnsw.ef_search": str(HNSW_EF_SEARCH),
    "hnsw.max_scan_tuples": "100000",
}
"""pgvector settings of kioku's HNSW searches: keep walking the graph until enough rows pass
the scope filter (the candidate list bounds each step), for up to five times the visits the
plan expects (``kioku._search.planning.HNSW_MAX_VISITS``), so stale size estimates cost
time before they cost results; a walk that still stops short is followed by an exact scan
(``kioku._search.candidates``). Connections made by ``kioku._db.engine`` carry them from the
start."""
HNSW_SETTINGS_APPLIED = "kioku_hnsw_settings"
"""Key of a pooled connection's ``info`` saying it carries :data:`HNSW_SEARCH_SETTINGS`."""
MODEL_KEY = "embedding_model"
DIMENSION_KEY = "embedding_dimension"

SCOPE_VECTOR_INDEXES = {
    "ix_memories_server_embeddings": ("server_id, persona_lineage_id", "scope = 'server'"),
    "ix_memories_personal_embeddings": ("user_id, persona_lineage_id", "scope = 'personal'"),
}
"""Covering indexes holding each scope's vectors, for exact search without heap visits."""
COVERING_MAX_DIMENSION = 1024
"""B-tree entries are capped near 2,700 bytes and a halfvec takes 2 bytes a dimension:
wider embeddings go without the covering indexes (exact search then reads the table)."""


def halfvec_text(vector: Sequence[float]) -> str:
    """``vector`` rounded to half precision, in pgvector's text form.

    Python's shortest-repr formatting of 384 dense floats takes longer than the server's
    whole insert. Rounded to halves first, five significant digits name each value
    exactly (a half has 11 significant bits), so the server stores these very halves.
    """
    layout = f"{len(vector)}e"
    halves = struct.unpack(layout, struct.pack(layout, *vector))
    return "[" + (("%.5g," * len(halves))[:-1] % halves) + "]"


RECORDED_EMBEDDER_SQL = (
    "(SELECT ARRAY[m.value, d.value] FROM kioku_meta AS m, kioku_meta AS d "
    f"WHERE m.key = '{MODEL_KEY}' AND d.key = '{DIMENSION_KEY}')"
)
"""The embedder ``kioku_meta`` records, as ``ARRAY[model, dimension]`` (``NULL`` before the
first setup): an expression other reads embed (:func:`recorded_embedder` reads it)."""


def recorded_embedder(value: Sequence[str] | None) -> tuple[str, int] | None:
    """The ``(model, dimension)`` of a :data:`RECORDED_EMBEDDER_SQL` value.

    Raises:
        ValueError: the recorded dimension is not a number.
    """
    if not value:
        return None
    model, dimension = value
    return str(model), int(dimension)


def readable_embedder(value: Sequence[str] | None) -> tuple[str, int] | None:
    """:func:`recorded_embedder`, a record that cannot be read counting as none.

    For reads that go on as if the embedders agreed (a turn, a search): ``kioku reembed``
    and ``setup()`` judge such a record.
    """
    try:
        return recorded_embedder(value)
    except ValueError:
        return None


def stored_embedder(connection: Connection) -> tuple[str, int] | None:
    """The embedder recorded in ``kioku_meta`` (``None`` before the first setup)."""
    value = connection.execute(text(f"SELECT {RECORDED_EMBEDDER_SQL}")).scalar_one()
    return recorded_embedder(value)


def _refuse_mismatch(stored: tuple[str, int] | None, model: str, dimension: int) -> None:
    """Raise when the database's vectors come from another embedder than ``model``."""
    if stored is not None and stored != (model, dimension):
        raise EmbedderMismatchError(stored, (model, dimension))


def refuse_other_embedder(connection: Connection, model: str, dimension: int) -> None:
    """Refuse an embedder other than the one the database's vectors come from.

    A database not set up yet (no ``kioku_meta``) passes: ``setup()`` records one.

    Raises:
        EmbedderMismatchError: naming both embedders and how to switch.
    """
    if connection.scalar(text("SELECT to_regclass('kioku_meta')")) is None:
        return
    _refuse_mismatch(stored_embedder(connection), model, dimension)


def ensure_vector_schema(
    connection: Connection,
    model: str,
    dimension: int,
    *,
    hnsw: bool | None = True,
    limits: tuple[int, int] = (0, 0),
) -> None:
    """Give the column its dimension and indexes on first setup; refuse a silent switch.

    ``hnsw`` builds (or drops) the HNSW index; building it over many rows takes a while.
    ``None`` builds it when a server's own limits allow scopes beyond exact search and
    otherwise keeps what exists (:func:`hnsw_wanted`).

    Raises:
        EmbedderMismatchError: when the database holds vectors of another embedder.
    """
    connection.execute(text("SET LOCAL statement_timeout = 0"))  # index builds take a while
    stored = stored_embedder(connection)
    if stored == (model, dimension) and _column_type(connection) == f"halfvec({dimension})":
        ensure_scope_vector_indexes(connection, dimension)
        _ensure_hnsw_index(connection, hnsw, limits)
        return
    _refuse_mismatch(stored, model, dimension)
    set_vector_schema(connection, model, dimension, hnsw=hnsw, limits=limits)


HnswCover = Literal["every", "server"]
"""Which scope kinds have their HNSW index: every kind, or server-wide memories alone (when
the personal memory limits, the settings' and every server's own, keep the personal
memories of :data:`PEOPLE_PER_SEARCH` people within exact search: then writing a personal
memory costs no index anything)."""
PEOPLE_PER_SEARCH = 20
"""People whose personal memories one search is taken to cover (a turn's participants)."""


def hnsw_wanted(
    connection: Connection, wish: bool | None, limits: tuple[int, int] = (0, 0)
) -> HnswCover | Literal[False] | None:
    """Build the HNSW index over these memories, drop it (``False``) or keep it (``None``).

    ``wish`` is the settings' :meth:`~kioku.KiokuSettings.wants_hnsw_index` and ``limits``
    their server-wide and personal memory limits; when the wish leaves the choice open, a
    server whose own memory limits exceed :data:`EXACT_SEARCH_MAX_ROWS` asks for the index.
    """
    if wish is False:
        return False
    largest = connection.execute(
        text(
            "SELECT coalesce(max(max_server_memories), 0), "
            "coalesce(max(max_personal_memories), 0) FROM servers"
        )
    ).one()
    server, personal = max(limits[0], int(largest[0])), max(limits[1], int(largest[1]))
    if wish is None and max(server, personal) <= EXACT_SEARCH_MAX_ROWS:
        return None
    people_beyond_exact = personal * PEOPLE_PER_SEARCH > EXACT_SEARCH_MAX_ROWS
    return "server" if server > EXACT_SEARCH_MAX_ROWS and not people_beyond_exact else "every"


_HNSW_PRESENT = text(
    "SELECT c.relname, pg_get_expr(i.indpred, i.indrelid), i.indisvalid FROM pg_index AS i "
    "JOIN pg_class AS c ON c.oid = i.indexrelid "
    "WHERE i.indexrelid IN (to_regclass(:server), to_regclass(:personal))"
)


def _usable_hnsw_indexes(connection: Connection) -> dict[str, str | None]:
    """The HNSW indexes searches can use, each with its predicate (``None``: none).

    An index a failed ``CREATE INDEX CONCURRENTLY`` left behind is invalid: not usable.
    """
    rows = connection.execute(_HNSW_PRESENT, HNSW_INDEXES).all()
    return {name: predicate for name, predicate, valid in rows if valid}


def hnsw_cover(connection: Connection) -> HnswCover | None:
    """Which scope kinds the usable HNSW indexes were built for (``None``: none).

    A single index over every memory, as databases set up before the per-kind indexes
    have, counts as ``"every"``: it serves every search, and ``setup()`` keeps it. So does
    a personal index, whose server-wide twin ``setup()`` builds when it is missing.
    """
    present, server = _usable_hnsw_indexes(connection), HNSW_INDEXES["server"]
    if HNSW_INDEXES["personal"] in present or (server in present and present[server] is None):
        return "every"
    return "server" if server in present else None


def _ensure_hnsw_index(
    connection: Connection,
    wish: bool | None,
    limits: tuple[int, int],
    *,
    at_least: HnswCover | None = None,
) -> None:
    """Build, widen, drop or keep the indexes as :func:`hnsw_wanted` says; never narrow them.

    Every kind the cover needs gets its index when it has none usable (one a failed
    concurrent build left invalid is built again), so a half-done switch heals.
    ``at_least``: what indexes dropped just before covered (rebuilt at least as wide).
    """
    wanted = hnsw_wanted(connection, wish, limits)
    if wanted is None and at_least is None:
        return
    if wanted is False:
        _drop_hnsw_indexes(connection)
        return
    present, server = _usable_hnsw_indexes(connection), HNSW_INDEXES["server"]
    if server in present and present[server] is None:
        return  # one index over every memory serves every search
    cover: HnswCover = "every" if "every" in (wanted, at_least) else "server"
    for kind in ("server", "personal") if cover == "every" else ("server",):
        name = HNSW_INDEXES[kind]
        if name not in present:
            connection.execute(text(f"DROP INDEX IF EXISTS {name}"))
            connection.execute(
                text(
                    f"CREATE INDEX {name} ON memories "
                    f"USING hnsw (embedding halfvec_cosine_ops) WHERE scope = '{kind}'"
                )
            )


def _drop_hnsw_indexes(connection: Connection) -> None:
    for name in HNSW_INDEXES.values():
        connection.execute(text(f"DROP INDEX IF EXISTS {name}"))


def _column_type(connection: Connection) -> str:
    return str(
        connection.execute(
            text(
                "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
                "WHERE attrelid = 'memories'::regclass AND attname = 'embedding'"
            )
        ).scalar_one()
    )


def set_vector_schema(
    connection: Connection,
    model: str,
    dimension: int,
    *,
    hnsw: bool | None = True,
    limits: tuple[int, int] = (0, 0),
) -> None:
    """(Re)type the column as ``halfvec(dimension)`` and index it.

    Vectors of that size are kept (converted from full precision where needed); vectors
    of another size are cleared, for ``kioku reembed`` to fill in. ``hnsw`` as for
    :func:`ensure_vector_schema` (``None`` rebuilds an HNSW index that existed).
    """
    connection.execute(text("SET LOCAL statement_timeout = 0"))  # retyping rewrites the table
    before = hnsw_cover(connection) if hnsw is not False else None
    _drop_hnsw_indexes(connection)
    _drop_scope_vector_indexes(connection)
    connection.execute(
        text(
            f"ALTER TABLE memories ALTER COLUMN embedding TYPE halfvec({int(dimension)}) "
            f"USING CASE WHEN vector_dims(embedding) = {int(dimension)} "
            f"THEN embedding::halfvec({int(dimension)}) END"
        )
    )
    _ensure_hnsw_index(connection, hnsw, limits, at_least=before)
    ensure_scope_vector_indexes(connection, dimension)
    for key, value in ((MODEL_KEY, model), (DIMENSION_KEY, str(dimension))):
        connection.execute(
            text(
                "INSERT INTO kioku_meta (key, value) VALUES (:k, :v) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
            ),
            {"k": key, "v": value},
        )


def ensure_scope_vector_indexes(connection: Connection, dimension: int) -> None:
    """Create the covering scope indexes when vectors of ``dimension`` fit in them."""
    if dimension > COVERING_MAX_DIMENSION:
        _drop_scope_vector_indexes(connection)
        return
    for name, (keys, scope) in SCOPE_VECTOR_INDEXES.items():
        connection.execute(
            text(
                f"CREATE INDEX IF NOT EXISTS {name} ON memories ({keys}) "
                f"INCLUDE (id, memory_type, embedding) "
                f"WHERE {scope} AND status = 'active' AND embedding IS NOT NULL"
            )
        )


def _drop_scope_vector_indexes(connection: Connection) -> None:
    for name in SCOPE_VECTOR_INDEXES:
        connection.execute(text(f"DROP INDEX IF EXISTS {name}"))
