"""``KiokuLangGraphStore``: LangGraph's ``BaseStore`` with kioku's memories underneath."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)
from sqlalchemy import text
from sqlalchemy.orm import Session

from kioku._awaiting import off_loop
from kioku._deps import HasDeps
from kioku._errors import ConfigurationError
from kioku._lgstore import sql
from kioku._lgstore.namespaces import (
    DEFAULT_SERVER,
    IndexFields,
    ScopeRule,
    check_key,
    check_namespace,
    namespace_rule,
)
from kioku._lgstore.search import item_fields, query_vector, ranked_items, search_item
from kioku._lgstore.writes import check_put, prepare, write_all


class KiokuLangGraphStore(BaseStore):
    """LangGraph's long-term memory store (``BaseStore``) on kioku's memories.

    Every item is a kioku memory: its searchable text (the ``index`` fields of its value)
    gets kioku's hybrid search, its scope's privacy and erasure, and a ``memory_history``
    row for each change of that text and for its deletion. The namespace, key and JSON
    value are kept beside the memory (table ``langgraph_items``), never in its text.

    Which scope an item's memory lives in is decided by ``scope`` (a function of the
    namespace), by default: the personal memories of user ``namespace[user_label]`` when
    ``user_label`` is given and the namespace has that label, else the server-wide
    memories of ``server_id``; lineage 0 either way. Reads never depend on the scope: an
    item is found by its namespace and key, and a search sees only its namespace prefix.

    No TTL (``supports_ttl`` is ``False``): items live until deleted or erased.

    Example:
        ```python
        store = kioku.KiokuStore.open()
        store.setup()
        lg_store = kioku.KiokuLangGraphStore(store, user_label=1)
        agent = create_agent(model, tools=[...], store=lg_store)
        ```
    """

    supports_ttl = False

    def __init__(
        self,
        store: HasDeps,
        *,
        index: Mapping[str, Any] | None = None,
        server_id: str = DEFAULT_SERVER,
        user_label: int | None = None,
        scope: ScopeRule | None = None,
    ) -> None:
        """Serve ``store``'s database (its schema set up: ``store.setup()``).

        Args:
            store: a :class:`kioku.KiokuStore` (or its dependencies).
            index: LangGraph's index config; only ``fields`` is used (default ``["$"]``,
                the whole value). Items are always embedded, with the store's embedder.
            server_id: the server key of server-wide items (default rule).
            user_label: the position of the namespace label holding the user id
                (default rule); ``None``: every item is server-wide.
            scope: replaces the default rule: namespace → :class:`kioku.ServerScope` or
                :class:`kioku.PersonalScope`.

        Raises:
            ConfigurationError: an ``index`` with ``embed`` or other ``dims`` than the
                embedder's, or bad fields; an empty ``server_id``; a negative ``user_label``.
        """
        self.deps = store.deps
        self.index = IndexFields.of(index, self.deps.embedder.dimension)
        rule = namespace_rule(server_id=server_id, user_label=user_label)
        self.scope_rule: ScopeRule = scope if scope is not None else rule

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops``: every read first (as LangGraph's ``PostgresStore``), then the writes.

        The writes are one transaction; puts of the same item keep the last.

        Raises:
            InvalidNamespaceError: a namespace LangGraph refuses.
            ConfigurationError: any other bad operation (checked before anything runs).
        """
        ops = list(ops)
        puts = [op for op in ops if isinstance(op, PutOp)]
        for op in ops:
            _check(op)
        results: list[Result] = [None] * len(ops)
        reads = [(n, op) for n, op in enumerate(ops) if not isinstance(op, PutOp)]
        if reads:
            with self.deps.reads() as session:
                for n, op in reads:
                    results[n] = self._read(session, op)
        if puts:
            writes = prepare(self.deps, puts, self.scope_rule, self.index.fields)
            with self.deps.transaction() as session:
                write_all(session, writes)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` in a kioku worker thread (kioku's database access is sync)."""
        return await off_loop(self.batch, list(ops))

    def _read(self, session: Session, op: Op) -> Result:
        if isinstance(op, GetOp):
            return _get(session, op)
        if isinstance(op, SearchOp):
            return self._search(session, op)
        assert isinstance(op, ListNamespacesOp)
        statement, params = sql.namespaces_sql(op.match_conditions or (), op.max_depth)
        rows = session.execute(text(statement), {**params, "limit": op.limit, "offset": op.offset})
        return [tuple(row.ns) for row in rows]

    def _search(self, session: Session, op: SearchOp) -> list[SearchItem]:
        filters, params = sql.filter_sql(op.filter, "i")
        params["prefix"] = list(op.namespace_prefix)
        if op.query:
            vector = query_vector(self.deps, op.query)
            return ranked_items(
                session, op.query, vector, (filters, params), limit=op.limit, offset=op.offset
            )
        rows = session.execute(
            text(sql.listing_sql(filters)), {**params, "limit": op.limit, "offset": op.offset}
        )
        return [search_item(row) for row in rows]


def _get(session: Session, op: GetOp) -> Item | None:
    row = session.execute(
        text(sql.GET_ITEM), {"namespace": list(op.namespace), "key": op.key}
    ).first()
    return Item(**item_fields(row)) if row is not None else None


def _check(op: Op) -> None:
    """Refuse an operation before any runs (LangGraph's errors for namespaces).

    Raises:
        InvalidNamespaceError: a namespace label LangGraph refuses.
        ConfigurationError: anything else malformed.
    """
    if isinstance(op, PutOp):
        check_put(op)
    elif isinstance(op, GetOp):
        check_namespace(op.namespace, exact=False)
        check_key(op.key)
    elif isinstance(op, SearchOp):
        check_namespace(op.namespace_prefix, exact=False)
        _check_page(op.limit, op.offset)
        sql.filter_sql(op.filter, "i")
    elif isinstance(op, ListNamespacesOp):
        for condition in op.match_conditions or ():
            check_namespace(condition.path, exact=False)
        _check_page(op.limit, op.offset)
        if op.max_depth is not None and op.max_depth < 1:
            raise ConfigurationError(f"max_depth must be at least 1, not {op.max_depth}")
    else:
        raise ConfigurationError(f"unknown store operation {type(op).__name__}")


def _check_page(limit: int, offset: int) -> None:
    if not isinstance(limit, int) or not isinstance(offset, int) or limit < 0 or offset < 0:
        raise ConfigurationError(
            f"limit and offset must be whole numbers from 0, not {limit!r} and {offset!r}"
        )
