"""Puts and deletes: each item's memory and row, written in one transaction per batch.

Locks are taken in one order by every batch, so two batches never wait on each other in a
cycle: first each item's lock, in address order; then each scope's
(:attr:`kioku.ServerScope.lock_key`, the lock kioku's own creates take), in key order;
only then any row, scope by scope. A batch holding a scope's lock is the only batch
writing that scope's rows (the counts, the owner), so the row locks its triggers take
cannot cross another batch's. All are transaction locks: they hold behind PgBouncer in
transaction mode.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langgraph.store.base import PutOp
from sqlalchemy import text
from sqlalchemy.orm import Session

from kioku._context import Participant, PrivacyLevel
from kioku._db.vectors import halfvec_text
from kioku._deps import KiokuDeps
from kioku._domain.scopes import PersonalScope, ServerScope
from kioku._errors import ItemRefusedError
from kioku._lgstore import sql
from kioku._lgstore.namespaces import (
    Namespace,
    ScopeRule,
    checked_scope,
    indexed_text,
    unindexed_text,
)
from kioku._memory.flow import embed_or_queue
from kioku._memory.text import normalise_name
from kioku._reach import has_personal_memories

Scope = ServerScope | PersonalScope


@dataclass(frozen=True)
class Write:
    """One put, ready to write: its text embedded outside the transaction."""

    namespace: Namespace
    key: str
    value: dict[str, Any] | None
    """``None``: delete the item."""
    scope: Scope | None
    """The rule's scope, for an item's first put (``None`` for a delete)."""
    content: str = ""
    embedding: list[float] | None = None
    indexed: bool = False
    """Whether the item has indexed text: else its memory is archived, never shown."""
    embedder: str | None = None
    """The model that made ``embedding`` (the database keeps only its recorded model's)."""

    @property
    def lock(self) -> str:
        """The item's advisory lock key (its address, unambiguous)."""
        return "langgraph-item:" + json.dumps([self.namespace, self.key], ensure_ascii=False)


@dataclass(frozen=True)
class Placed:
    """A write with the memory it changes (``None``: a new one) and the scope it is in."""

    write: Write
    memory_id: int | None
    scope: Scope | None
    """``None``: a delete of an item that does not exist (nothing to do)."""

    @property
    def order(self) -> tuple[str, str]:
        """Scope by scope, then item by item."""
        return (self.scope.lock_key if self.scope is not None else "", self.write.lock)


def prepare(
    deps: KiokuDeps, ops: Sequence[PutOp], rule: ScopeRule, fields: Sequence[str]
) -> list[Write]:
    """The puts of a batch, the last of each item's winning, embedded.

    Args:
        deps: the embedder's owner, and kioku's settings (``MAX_MEMORY_LENGTH``).
        ops: checked puts (:func:`kioku._lgstore.checks.check_put`).
        rule: the namespace's scope.
        fields: the store's index fields, for puts that name none.

    Raises:
        ItemRefusedError: an item's indexed text is longer than a memory may be.
    """
    latest = {(tuple(op.namespace), op.key): op for op in ops}
    return [_prepared(deps, op, rule, fields) for op in latest.values()]


def _prepared(deps: KiokuDeps, op: PutOp, rule: ScopeRule, fields: Sequence[str]) -> Write:
    namespace = tuple(op.namespace)
    if op.value is None:
        return Write(namespace, op.key, None, None)
    scope = checked_scope(rule, namespace)
    chosen = fields if op.index is None else (op.index or ())
    limit = deps.settings.max_memory_length
    content = indexed_text(op.value, chosen, limit) if chosen else None
    if content is None:
        return Write(namespace, op.key, dict(op.value), scope, unindexed_text(op.value))
    vector = embed_or_queue(deps, content)
    model = deps.embedder.model if vector is not None else None
    return Write(namespace, op.key, dict(op.value), scope, content, vector, True, model)


def write_all(session: Session, writes: Sequence[Write]) -> None:
    """Carry the writes out in ``session``'s transaction (the caller commits).

    Raises:
        ItemRefusedError: a put of a personal item whose owner's privacy allows no
            personal memories (the caller's rollback leaves nothing written).
    """
    for write in sorted(writes, key=lambda write: write.lock):
        session.execute(text(sql.LOCK), {"lock": write.lock})
    placed = [_placed(session, write) for write in writes]
    scopes = {p.scope.lock_key for p in placed if p.scope is not None}
    for lock in sorted(scopes):
        session.execute(text(sql.LOCK), {"lock": lock})
    owners = {
        p.scope.owner_id
        for p in placed
        if p.write.value is not None and isinstance(p.scope, PersonalScope)
    }
    if owners:
        check_privacy(session, owners)
    for p in sorted(placed, key=lambda p: p.order):
        if p.scope is not None:
            _write(session, p)


def _placed(session: Session, write: Write) -> Placed:
    """``write`` with its item's memory and that memory's scope, read under the item lock."""
    address = {"namespace": list(write.namespace), "key": write.key}
    row = session.execute(text(sql.FIND_ITEM), address).first()
    if row is None:
        return Placed(write, None, write.scope)
    scope: Scope = (
        ServerScope(row.owner, row.persona_lineage_id)
        if row.scope == ServerScope.kind
        else PersonalScope(row.owner, row.persona_lineage_id)
    )
    return Placed(write, int(row.id), scope)


def check_privacy(session: Session, owners: set[str]) -> None:
    """Refuse personal items of people kioku may keep no personal memories of.

    The rule is kioku's own (:func:`kioku._reach.has_personal_memories`): only people of
    privacy level ``MINIMAL``, not bridged from another network. A person kioku does not
    know yet has the default level, ``MINIMAL``.

    Raises:
        ItemRefusedError: naming the first such person and their privacy level.
    """
    rows = session.execute(text(sql.PEOPLE), {"ids": sorted(owners)})
    for row in sorted(rows, key=lambda row: row.id):
        level = PrivacyLevel(row.privacy_level)
        person = Participant(
            row.id, row.display_name or row.id, privacy=level, is_bridge=row.is_bridge
        )
        if not has_personal_memories(person, bot_user_id=""):
            why = "a bridged user" if row.is_bridge else f"privacy level {level.name}"
            raise ItemRefusedError(
                f"user {row.id!r} ({why}) allows no personal memories: nothing was written; "
                "do not store it elsewhere (they can change the setting themselves)"
            )


def _write(session: Session, placed: Placed) -> None:
    write, scope = placed.write, placed.scope
    assert scope is not None
    address = {"namespace": list(write.namespace), "key": write.key}
    if write.value is None:
        session.execute(text(sql.DELETE_ITEM), address)
        return
    memory = {
        "content": write.content,
        "embedding": halfvec_text(write.embedding) if write.embedding is not None else None,
        "embedder": write.embedder,
        "indexed": write.indexed,
        "status": "active" if write.indexed else "archived",
    }
    item = {"value": json.dumps(write.value, ensure_ascii=False), "indexed": write.indexed}
    if placed.memory_id is not None:
        changed = session.execute(
            text(sql.CHANGE_MEMORY), {**memory, "memory_id": placed.memory_id}
        )
        if getattr(changed, "rowcount", 0):
            session.execute(text(sql.CHANGE_ITEM), {**item, "memory_id": placed.memory_id})
            return
    # New, or its memory deleted by kioku's tools since it was found (the item with it):
    # saved again in the scope locked for it.
    memory_id = _add_memory(session, scope, memory)
    session.execute(text(sql.ADD_ITEM), {**address, **item, "memory_id": memory_id})


def _add_memory(session: Session, scope: Scope, memory: dict[str, Any]) -> int:
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
