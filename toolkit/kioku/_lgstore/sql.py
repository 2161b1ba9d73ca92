"""The LangGraph store's statements as SQL text: pure rendering, no I/O.

Items live in ``langgraph_items`` (migration 0022), each beside the memory holding its
text. Namespaces are ``text[]`` compared label by label, so a prefix matches whole labels
only (``("foo",)`` never matches ``("foobar",)``) and no label is a pattern.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from langgraph.store.base import MatchCondition

from kioku._db.text_search import TEXT_QUERY
from kioku._errors import ConfigurationError

Params = dict[str, Any]

OWN_PREFIX = "{a}.namespace[1:cardinality(CAST(:prefix AS text[]))] = CAST(:prefix AS text[])"
"""Items whose namespace starts with ``:prefix`` (label by label; ``{}`` matches all)."""

GET_ITEM = (
    "SELECT namespace, key, value, created_at, updated_at FROM langgraph_items "
    "WHERE namespace = CAST(:namespace AS text[]) AND key = :key"
)
ITEMS_BY_MEMORY = (
    "SELECT memory_id, namespace, key, value, created_at, updated_at FROM langgraph_items "
    "WHERE memory_id = ANY(CAST(:ids AS bigint[]))"
)

LOCK = "SELECT pg_advisory_xact_lock(hashtextextended(:lock, 0))"
"""A transaction's advisory lock on text: an item's address, or a scope's
(:attr:`kioku.ServerScope.lock_key`, which kioku's own creates take)."""
FIND_ITEM = (
    "SELECT m.id, m.scope, COALESCE(m.server_id, m.user_id) AS owner, m.persona_lineage_id "
    "FROM langgraph_items AS i JOIN memories AS m ON m.id = i.memory_id "
    "WHERE i.namespace = CAST(:namespace AS text[]) AND i.key = :key"
)
"""The item's memory and the scope it lives in."""
PEOPLE = (
    "SELECT id, display_name, privacy_level, is_bridge FROM users "
    "WHERE id = ANY(CAST(:ids AS text[]))"
)
"""What the privacy rule reads of the owners of personal items."""
ADD_SERVER = "INSERT INTO servers (id, name) VALUES (:owner, :owner) ON CONFLICT (id) DO NOTHING"
ADD_USER = (
    "INSERT INTO users (id, display_name, display_name_key) "
    "VALUES (:owner, :owner, :owner_key) ON CONFLICT (id) DO NOTHING"
)
"""A scope's owner, registered by its first item (as kioku's own create does)."""
ADD_MEMORY = (
    "INSERT INTO memories (scope, server_id, user_id, persona_lineage_id, content, "
    "embedding, needs_embedding, embedded_with, status) SELECT :scope, :server_id, :user_id, "
    ":lineage, :content, v.embedding, CAST(:indexed AS boolean) AND v.needs_embedding, "
    "v.embedded_with, :status "
    "FROM kioku_vector_columns(CAST(:embedding AS halfvec), :embedder) AS v RETURNING id"
)
"""The item's memory; its ``create`` history row and scope count come from triggers. An
item without indexed text has an ``archived`` memory, which kioku never shows a model. Its
vector is kept only while the database records the model that made it
(``kioku_vector_columns``, as kioku's own creates); else an indexed item is queued."""
ADD_ITEM = (
    "INSERT INTO langgraph_items (namespace, key, memory_id, value, indexed) "
    "VALUES (CAST(:namespace AS text[]), :key, :memory_id, CAST(:value AS jsonb), :indexed)"
)
CHANGE_MEMORY = (
    "UPDATE memories SET content = :content, embedding = v.embedding, "
    "needs_embedding = CAST(:indexed AS boolean) AND v.needs_embedding, "
    "embedded_with = v.embedded_with, status = :status, updated_at = now() "
    "FROM kioku_vector_columns(CAST(:embedding AS halfvec), :embedder) AS v "
    "WHERE memories.id = :memory_id"
)
"""A new text for the item's memory (an ``update`` history row when the text changed)."""
CHANGE_ITEM = (
    "UPDATE langgraph_items SET value = CAST(:value AS jsonb), indexed = :indexed, "
    "updated_at = now() WHERE memory_id = :memory_id"
)
DELETE_ITEM = (
    "DELETE FROM memories WHERE id IN (SELECT memory_id FROM langgraph_items "
    "WHERE namespace = CAST(:namespace AS text[]) AND key = :key)"
)
"""Deletes the memory (its ``delete`` history row by trigger) and, by cascade, the item."""

_COMPARISONS = {"$eq": "=", "$ne": "<>", "$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
"""The filter operators LangGraph's stores support, as jsonb comparisons."""


def json_text(value: Any, what: str) -> str:
    """``value`` as JSON text for a ``jsonb`` parameter.

    Raises:
        ConfigurationError: ``value`` is not JSON.
    """
    try:
        return json.dumps(value, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(f"{what} is not JSON ({type(value).__name__})") from exc


def _conditions(condition: Any) -> list[tuple[str, Any]]:
    """A filter entry's ``(operator, operand)`` pairs: an operator dict, else equality."""
    if (
        isinstance(condition, Mapping)
        and condition
        and all(isinstance(name, str) and name.startswith("$") for name in condition)
    ):
        unknown = [name for name in condition if name not in _COMPARISONS]
        if unknown:
            known = ", ".join(_COMPARISONS)
            raise ConfigurationError(f"unsupported filter operator {unknown[0]!r}; use {known}")
        return list(condition.items())
    return [("$eq", condition)]


def filter_sql(filter: Mapping[str, Any] | None, alias: str) -> tuple[str, Params]:
    """``AND`` conditions on ``{alias}.value`` for a search's ``filter``, and their parameters.

    A field's value equals the filter's (JSON equality), or meets each ``$`` operator:
    ``$eq``/``$ne`` compare any JSON (``$ne`` also keeps items without the field);
    ``$gt``/``$gte``/``$lt``/``$lte`` hold only between values of the same JSON type
    (numbers as numbers, strings as text).

    Raises:
        ConfigurationError: an unknown operator, a field that is not a string, or an
            operand that is not JSON.
    """
    sql: list[str] = []
    params: Params = {}
    for n, (field, condition) in enumerate((filter or {}).items()):
        if not isinstance(field, str):
            raise ConfigurationError(f"filter fields are strings, got {field!r}")
        for m, (operator, operand) in enumerate(_conditions(condition)):
            key, value = f"fk{n}_{m}", f"fv{n}_{m}"
            params[key] = field
            params[value] = json_text(operand, f"the filter on {field!r}")
            found = f"{alias}.value -> :{key}"
            given = f"CAST(:{value} AS jsonb)"
            if operator == "$ne":
                sql.append(f" AND {found} IS DISTINCT FROM {given}")
            elif operator == "$eq":
                sql.append(f" AND {found} = {given}")
            else:
                sql.append(
                    f" AND jsonb_typeof({found}) = jsonb_typeof({given}) "
                    f"AND {found} {_COMPARISONS[operator]} {given}"
                )
    return "".join(sql), params


def listing_sql(filters: str) -> str:
    """A search without a query: the prefix's items, last updated first."""
    return (
        "SELECT namespace, key, value, created_at, updated_at FROM langgraph_items AS i "
        f"WHERE {OWN_PREFIX.format(a='i')}{filters} "
        "ORDER BY i.updated_at DESC, i.memory_id DESC LIMIT :limit OFFSET :offset"
    )


_RANKED = "m.id, m.importance, m.decay_rate, m.created_at, m.happened_at"
"""What kioku's fusion reads of a candidate (``kioku._search.rows.RankedRow``)."""


def candidates_sql(filters: str, *, vector: bool, text: bool) -> str:
    """The prefix's indexed items nearest the query vector and matching its words.

    Rows as :class:`kioku._search.rows.RankedRow`: the ``:pool`` best of each search,
    tagged ``vector`` (score: cosine distance) or ``text`` (score: ``ts_rank_cd``). The
    distance is computed exactly ("OFFSET 0" keeps the subquery): an HNSW walk over all
    memories could miss the prefix's few.
    """
    items = (
        "WITH items AS MATERIALIZED (SELECT i.memory_id FROM langgraph_items AS i "
        f"WHERE i.indexed AND {OWN_PREFIX.format(a='i')}{filters}) "
    )
    searches = []
    if vector:
        searches.append(
            "(SELECT *, 'vector' AS source, NULL::float8 AS matched FROM "
            f"(SELECT {_RANKED}, (m.embedding <=> CAST(:vector AS halfvec))::float8 AS score "
            "FROM items JOIN memories AS m ON m.id = items.memory_id "
            "WHERE m.embedding IS NOT NULL OFFSET 0) AS scored ORDER BY score, id LIMIT :pool)"
        )
    if text:
        searches.append(
            f"(SELECT {_RANKED}, ts_rank_cd(m.search_vector, query)::float8 AS score, "
            "'text' AS source, NULL::float8 AS matched "
            "FROM items JOIN memories AS m ON m.id = items.memory_id, "
            f"{TEXT_QUERY} AS query WHERE m.search_vector @@ query "
            "ORDER BY score DESC, m.id LIMIT :pool)"
        )
    if not searches:
        raise ValueError("a ranked search needs a query vector or words")
    return items + " UNION ALL ".join(searches)


def namespaces_sql(
    conditions: Sequence[MatchCondition], max_depth: int | None
) -> tuple[str, Params]:
    """Distinct namespaces matching every condition, cut at ``max_depth``, in order.

    A prefix condition matches the first labels, a suffix condition the last; ``"*"``
    matches any one label; an empty path matches every namespace.
    """
    where = ["true"]
    params: Params = {}
    for n, condition in enumerate(conditions):
        path = tuple(condition.path)
        if condition.match_type not in ("prefix", "suffix"):
            raise ConfigurationError(
                f"unknown match_type {condition.match_type!r}; use 'prefix' or 'suffix'"
            )
        if not path:
            continue
        where.append(f"cardinality(namespace) >= {len(path)}")
        for j, label in enumerate(path):
            if label == "*":
                continue
            position = (
                str(j + 1)
                if condition.match_type == "prefix"
                else f"cardinality(namespace) - {len(path) - 1 - j}"
            )
            params[f"c{n}_{j}"] = label
            where.append(f"namespace[{position}] = :c{n}_{j}")
    shown = "namespace" if max_depth is None else f"namespace[1:{int(max_depth)}]"
    sql = (
        f"SELECT DISTINCT {shown} AS ns FROM langgraph_items WHERE {' AND '.join(where)} "
        "ORDER BY ns LIMIT :limit OFFSET :offset"
    )
    return sql, params
