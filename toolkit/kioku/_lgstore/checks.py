"""The store's operations checked before any runs: each bad input a one-line error."""

from __future__ import annotations

from collections.abc import Mapping

from langgraph.store.base import GetOp, ListNamespacesOp, PutOp, SearchOp

from kioku._errors import ConfigurationError, ItemRefusedError
from kioku._lgstore import sql
from kioku._lgstore.namespaces import (
    check_fields,
    check_key,
    check_namespace,
    check_value,
    json_problem,
)
from kioku._memory.text import unstorable


def check_op(op: object) -> None:
    """Refuse an operation before any runs (LangGraph's errors for namespaces).

    Raises:
        InvalidNamespaceError: a namespace LangGraph refuses, or one kioku cannot keep.
        ItemRefusedError: a key, value, query or filter PostgreSQL cannot take as given.
        ConfigurationError: anything else malformed.
    """
    if isinstance(op, PutOp):
        check_put(op)
    elif isinstance(op, GetOp):
        check_key(op.key, check_namespace(op.namespace, exact=False))
    elif isinstance(op, SearchOp):
        check_namespace(op.namespace_prefix, exact=False)
        check_page(op.limit, op.offset)
        check_query(op.query)
        check_filter(op.filter)
    elif isinstance(op, ListNamespacesOp):
        for condition in op.match_conditions or ():
            check_namespace(condition.path, exact=False)
        check_page(op.limit, op.offset)
        depth = op.max_depth
        if depth is not None and (not _whole(depth) or depth < 1):
            raise ConfigurationError(f"max_depth must be a whole number from 1, not {depth!r}")
    else:
        raise ConfigurationError(f"unknown store operation {type(op).__name__}")


def check_put(op: PutOp) -> None:
    """Refuse a put this store cannot carry out, before anything is written.

    Raises:
        InvalidNamespaceError: as LangGraph's stores do.
        ItemRefusedError: a key or value PostgreSQL cannot store as given.
        ConfigurationError: a TTL (not supported), or an ``index`` that is neither
            ``None``, ``False`` nor a list of paths.
    """
    check_key(op.key, check_namespace(op.namespace, exact=True))
    if op.ttl is not None:
        raise ConfigurationError("KiokuLangGraphStore does not support TTL (supports_ttl=False)")
    if op.value is not None:
        check_value(op.value)
    index: object = op.index
    if index is True:
        raise ConfigurationError(
            "put's index is False, None (the store's fields) or a list of paths, not True"
        )
    if index is not None and index is not False:
        check_fields(index)


def check_page(limit: object, offset: object) -> None:
    """Refuse a ``limit`` or ``offset`` that is not a whole number from 0.

    Raises:
        ConfigurationError: either is negative, a ``bool``, or not an ``int``.
    """
    if not _whole(limit) or not _whole(offset) or limit < 0 or offset < 0:  # type: ignore[operator]
        raise ConfigurationError(
            f"limit and offset must be whole numbers from 0, not {limit!r} and {offset!r}"
        )


def check_query(query: object) -> None:
    """Refuse a search query that is neither ``None`` nor a storable string.

    Raises:
        ConfigurationError: not a string.
        ItemRefusedError: a NUL character or a lone surrogate in it.
    """
    if query is None:
        return
    if not isinstance(query, str):
        raise ConfigurationError(f"query must be a string or None, not {query!r}")
    problem = unstorable(query)
    if problem is not None:
        raise ItemRefusedError(f"the query holds {problem}, which PostgreSQL cannot take")


def check_filter(filter: object) -> None:
    """Refuse a filter that is not a dict of field conditions PostgreSQL can take.

    Raises:
        ConfigurationError: not a dict, or an unknown operator.
        ItemRefusedError: a field or value that is not JSON, or holds a NUL character or
            a lone surrogate.
    """
    if filter is None:
        return
    if not isinstance(filter, Mapping):
        raise ConfigurationError(
            f'filter is a dict such as {{"field": value}}, not {type(filter).__name__}'
        )
    problem = json_problem(filter)
    if problem is not None:
        raise ItemRefusedError(f"the filter {problem}")
    sql.filter_sql(filter, "i")


def _whole(number: object) -> bool:
    return isinstance(number, int) and not isinstance(number, bool)
