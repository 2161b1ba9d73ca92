"""``KiokuLangGraphStore``: LangGraph's ``BaseStore`` with kioku's memories underneath."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from enum import Enum
from typing import Any, Final, Literal

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
from sqlalchemy.exc import ProgrammingError
from sqlalchemy.orm import Session

from kioku._awaiting import off_loop
from kioku._deps import HasDeps, KiokuDeps
from kioku._errors import ConfigurationError
from kioku._lgstore import sql
from kioku._lgstore.checks import check_op
from kioku._lgstore.namespaces import DEFAULT_SERVER, IndexFields, ScopeRule, namespace_rule
from kioku._lgstore.search import item_fields, search_item, searched
from kioku._lgstore.writes import prepare, write_all


class _Unset(Enum):
    UNSET = "unset"


UNSET: Final = _Unset.UNSET
CHOOSE_OWNER = (
    "KiokuLangGraphStore needs to know who owns its items: pass user_label=1 for LangMem's "
    "('memories', '{langgraph_user_id}') namespaces (that label's user's personal memories), "
    "user_label=None to keep every item server-wide, or scope=<namespace -> ServerScope or "
    "PersonalScope>"
)
UNDEFINED_TABLE = "42P01"


class KiokuLangGraphStore(BaseStore):
    """LangGraph's long-term memory store (``BaseStore``) on kioku's memories.

    Every item is a kioku memory: its searchable text (the ``index`` fields of its value)
    gets kioku's hybrid search, its scope's privacy and erasure, and a ``memory_history``
    row for each change of that text and for its deletion. The namespace, key and JSON
    value are kept beside the memory (table ``langgraph_items``), never in its text.

    Which scope an item's memory lives in must be chosen (no default, so that nobody's
    items land server-wide by accident, out of reach of ``erase_user``): ``user_label=N``
    makes a namespace with a label at position ``N`` the personal memories of user
    ``namespace[N]`` and any other namespace the server-wide memories of ``server_id``;
    ``user_label=None`` makes every item server-wide; ``scope`` is your own rule (a
    function of the namespace). Lineage 0 either way. Reads never depend on the scope: an
    item is found by its namespace and key, and a search sees only its namespace prefix.

    Only an item's indexed text reaches a model through kioku (its context, search tools,
    MCP): an item without any (``index=False``, or none of the fields) is kept and listed
    here, but its memory is archived.

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
        user_label: int | None | Literal[_Unset.UNSET] = UNSET,
        scope: ScopeRule | None = None,
    ) -> None:
        """Serve ``store``'s database (its schema set up: ``store.setup()``).

        Args:
            store: a :class:`kioku.KiokuStore` (or its dependencies).
            index: LangGraph's index config; only ``fields`` is used (default ``["$"]``,
                the whole value). Items are always embedded, with the store's embedder.
            server_id: the server id of server-wide items (default rule).
            user_label: the position of the namespace label holding the user id, or
                ``None`` (every item server-wide). Required unless ``scope`` is given.
            scope: your own rule instead: namespace → :class:`kioku.ServerScope` (its
                ``server_id`` a server id, as ``erase_server`` takes) or
                :class:`kioku.PersonalScope`.

        Raises:
            ConfigurationError: neither or both of ``user_label`` and ``scope``; not a
                KiokuStore; an ``index`` that is not a dict of ``fields`` (no ``embed``,
                ``dims`` the embedder's); a ``server_id`` that is not a non-empty string;
                a ``user_label`` that is not an ``int`` from 0.
        """
        deps = getattr(store, "deps", None)
        if not isinstance(deps, KiokuDeps):
            raise ConfigurationError(
                f"KiokuLangGraphStore serves a kioku.KiokuStore, not {type(store).__name__}: "
                "pass KiokuStore.open()"
            )
        if (user_label is UNSET) == (scope is None):
            raise ConfigurationError(
                CHOOSE_OWNER if scope is None else "pass scope or user_label, not both"
            )
        if scope is not None and not callable(scope):
            raise ConfigurationError(f"scope must be a function of the namespace, not {scope!r}")
        self.deps = deps
        self.index = IndexFields.of(index, self.deps.embedder.dimension)
        label = None if user_label is UNSET else user_label
        rule = namespace_rule(server_id=server_id, user_label=label)
        self.scope_rule: ScopeRule = scope if scope is not None else rule

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops``: every read first (as LangGraph's ``PostgresStore``), then the writes.

        The writes are one transaction; puts of the same item keep the last.

        Raises:
            InvalidNamespaceError: a namespace LangGraph refuses.
            ItemRefusedError: an item kioku may not keep as given (its privacy, its text's
                length, a key or value PostgreSQL cannot store); nothing was written.
            ConfigurationError: any other bad operation (checked before anything runs),
                or a database without kioku's schema.
        """
        ops = list(ops)
        for op in ops:
            check_op(op)
        puts = [op for op in ops if isinstance(op, PutOp)]
        results: list[Result] = [None] * len(ops)
        reads = [(n, op) for n, op in enumerate(ops) if not isinstance(op, PutOp)]
        with _schema_checked():
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
        if op.query and op.query.strip():
            return searched(
                self.deps, session, op.query, (filters, params), limit=op.limit, offset=op.offset
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


@contextmanager
def _schema_checked() -> Iterator[None]:
    """Turn a missing ``langgraph_items`` table into a one-line error saying what to do.

    Raises:
        ConfigurationError: the database has not been set up (or not migrated to 0022).
    """
    try:
        yield
    except ProgrammingError as exc:
        if getattr(exc.orig, "sqlstate", None) != UNDEFINED_TABLE:
            raise
        raise ConfigurationError(
            "the database has no kioku schema (or not its latest): run store.setup() "
            "(or `kioku setup`) before using KiokuLangGraphStore"
        ) from exc
