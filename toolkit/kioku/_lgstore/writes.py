"""Puts and deletes: each item's memory and row, written in one transaction per batch."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langgraph.store.base import PutOp
from sqlalchemy import text
from sqlalchemy.orm import Session

from kioku._db.vectors import halfvec_text
from kioku._deps import KiokuDeps
from kioku._domain.scopes import PersonalScope, ServerScope
from kioku._errors import ConfigurationError
from kioku._lgstore import sql
from kioku._lgstore.namespaces import (
    WHOLE_VALUE,
    Namespace,
    ScopeRule,
    check_fields,
    check_key,
    check_namespace,
    check_value,
    checked_scope,
    item_text,
)
from kioku._memory.flow import embed_or_queue
from kioku._memory.text import normalise_name


@dataclass(frozen=True)
class Write:
    """One put, ready to write: its text embedded outside the transaction."""

    namespace: Namespace
    key: str
    value: dict[str, Any] | None
    """``None``: delete the item."""
    scope: ServerScope | PersonalScope | None
    content: str = ""
    embedding: list[float] | None = None
    indexed: bool = False

    @property
    def lock(self) -> str:
        """The item's advisory lock key (its address, unambiguous)."""
        return "langgraph-item:" + json.dumps([self.namespace, self.key], ensure_ascii=False)


def check_put(op: PutOp) -> None:
    """Refuse a put this store cannot carry out, before anything is written.

    Raises:
        InvalidNamespaceError: as LangGraph's stores do.
        ConfigurationError: a TTL (not supported), a key or value PostgreSQL cannot
            store, or index fields that are not paths.
    """
    check_namespace(op.namespace, exact=True)
    check_key(op.key)
    if op.ttl is not None:
        raise ConfigurationError("KiokuLangGraphStore does not support TTL (supports_ttl=False)")
    if op.value is not None:
        check_value(op.value)
    if op.index not in (None, False):
        check_fields(op.index)  # type: ignore[arg-type]


def prepare(
    deps: KiokuDeps, ops: Sequence[PutOp], rule: ScopeRule, fields: Sequence[str]
) -> list[Write]:
    """The puts of a batch, the last of each item's winning, embedded and in lock order.

    Args:
        deps: the embedder's owner.
        ops: checked puts (:func:`check_put`).
        rule: the namespace's scope.
        fields: the store's index fields, for puts that name none.
    """
    latest = {(tuple(op.namespace), op.key): op for op in ops}
    writes = [_prepared(deps, op, rule, fields) for op in latest.values()]
    return sorted(writes, key=lambda write: write.lock)


def _prepared(deps: KiokuDeps, op: PutOp, rule: ScopeRule, fields: Sequence[str]) -> Write:
    namespace = tuple(op.namespace)
    if op.value is None:
        return Write(namespace, op.key, None, None)
    scope = checked_scope(rule, namespace)
    if op.index is False:
        content = item_text(op.value, (WHOLE_VALUE,))
        return Write(namespace, op.key, dict(op.value), scope, content)
    content = item_text(op.value, fields if op.index is None else op.index)
    vector = embed_or_queue(deps, content)
    return Write(namespace, op.key, dict(op.value), scope, content, vector, True)


def write_all(session: Session, writes: Sequence[Write]) -> None:
    """Carry the writes out in ``session``'s transaction (the caller commits)."""
    for write in writes:
        session.execute(text(sql.LOCK_ITEM), {"lock": write.lock})
        address = {"namespace": list(write.namespace), "key": write.key}
        if write.value is None or write.scope is None:
            session.execute(text(sql.DELETE_ITEM), address)
            continue
        memory = {
            "content": write.content,
            "embedding": halfvec_text(write.embedding) if write.embedding is not None else None,
            "queued": write.indexed and write.embedding is None,
        }
        item = {"value": json.dumps(write.value, ensure_ascii=False), "indexed": write.indexed}
        memory_id = session.scalar(text(sql.FIND_ITEM), address)
        if memory_id is None:
            memory_id = _add_memory(session, write.scope, memory)
            session.execute(text(sql.ADD_ITEM), {**address, **item, "memory_id": memory_id})
        else:
            session.execute(text(sql.CHANGE_MEMORY), {**memory, "memory_id": memory_id})
            session.execute(text(sql.CHANGE_ITEM), {**item, "memory_id": memory_id})


def _add_memory(
    session: Session, scope: ServerScope | PersonalScope, memory: dict[str, Any]
) -> int:
    """Save the item's memory in ``scope``, registering the scope's owner if new."""
    owner = scope.owner_id
    if isinstance(scope, ServerScope):
        session.execute(text(sql.ADD_SERVER), {"owner": owner})
    else:
        session.execute(text(sql.ADD_USER), {"owner": owner, "owner_key": normalise_name(owner)})
    memory_id = session.scalar(
        text(sql.ADD_MEMORY),
        {
            **memory,
            "scope": scope.kind,
            "server_id": owner if isinstance(scope, ServerScope) else None,
            "user_id": owner if isinstance(scope, PersonalScope) else None,
            "lineage": scope.lineage_id,
        },
    )
    return int(memory_id)
