"""Memory rows and their history, in the caller's session (the caller commits)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import (
    ColumnElement,
    Integer,
    Text,
    delete,
    func,
    insert,
    literal,
    select,
    text,
    true,
)
from sqlalchemy.orm import Session

from toolkit.db.models import Memory, MemoryHistory

GLOBAL_LINEAGE = 0
"""Personal memories with this lineage are visible to every persona."""


@dataclass(frozen=True, slots=True)
class ServerScope:
    """Server-wide memories of one persona lineage."""

    server_id: str
    lineage_id: int

    @property
    def lock_key(self) -> str:
        """Text hashed into the advisory lock that serialises writers of this scope."""
        return f"server:{self.server_id}:{self.lineage_id}"


@dataclass(frozen=True, slots=True)
class PersonalScope:
    """Personal memories of one user for one lineage (global ones included on reads)."""

    user_id: str
    lineage_id: int

    @property
    def lock_key(self) -> str:
        """Text hashed into the advisory lock; globals share it, as they count too."""
        return f"personal:{self.user_id}"


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    """A memory as the rest of kioku sees it (detached from the session)."""

    id: int
    scope: str
    server_id: str | None
    user_id: str | None
    persona_lineage_id: int
    content: str
    created_at: datetime
    updated_at: datetime


_RECORD_COLUMNS = (
    Memory.id,
    Memory.scope,
    Memory.server_id,
    Memory.user_id,
    Memory.persona_lineage_id,
    Memory.content,
    Memory.created_at,
    Memory.updated_at,
)
"""The columns of :class:`MemoryRecord`, in its field order."""


def _record(row: Memory) -> MemoryRecord:
    return MemoryRecord(
        id=row.id,
        scope=row.scope,
        server_id=row.server_id,
        user_id=row.user_id,
        persona_lineage_id=row.persona_lineage_id,
        content=row.content,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


class MemoryRepository:
    """Queries and writes on ``memories`` and ``memory_history``."""

    def __init__(self, session: Session) -> None:
        """Work inside ``session``; the caller opens the transaction and commits."""
        self.session = session

    def lock_scope(self, scope: ServerScope | PersonalScope) -> None:
        """Serialise writers of ``scope`` until the transaction ends (limit checks)."""
        self.session.execute(
            text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))"),
            {"key": scope.lock_key},
        )

    def count(self, scope: ServerScope | PersonalScope) -> int:
        """Active memories counted against the scope's limit."""
        statement = select(func.count()).select_from(Memory).where(Memory.status == "active")
        statement = statement.where(*self._scope_filter(scope))
        return int(self.session.execute(statement).scalar_one())

    def window(
        self, scope: ServerScope | PersonalScope, limit: int
    ) -> tuple[list[MemoryRecord], int]:
        """The ``limit`` newest active memories of ``scope`` and how many it holds in all."""
        rows = self.session.execute(
            select(*_RECORD_COLUMNS, func.count().over().label("total"))
            .where(Memory.status == "active", *self._scope_filter(scope))
            .order_by(Memory.created_at.desc(), Memory.id.desc())
            .limit(limit)
        ).all()
        total = int(rows[0].total) if rows else 0
        return [MemoryRecord(*cast(tuple[Any, ...], row)[:-1]) for row in rows], total

    def by_ids(self, ids: Sequence[int]) -> list[MemoryRecord]:
        """The active memories among ``ids`` (in no particular order)."""
        if not ids:
            return []
        rows = self.session.execute(
            select(*_RECORD_COLUMNS).where(Memory.id.in_(list(ids)), Memory.status == "active")
        )
        return [MemoryRecord(*cast(tuple[Any, ...], row)) for row in rows]

    def list(self, scope: ServerScope | PersonalScope) -> list[MemoryRecord]:
        """Active memories in ``scope``, newest first (only the columns a record needs)."""
        rows = self.session.execute(
            select(*_RECORD_COLUMNS)
            .where(Memory.status == "active", *self._scope_filter(scope))
            .order_by(Memory.created_at.desc(), Memory.id.desc())
        )
        return [MemoryRecord(*cast(tuple[Any, ...], row)) for row in rows]

    def add_within_limit(
        self,
        scope: ServerScope | PersonalScope,
        limit: int,
        content: str,
        *,
        persona_id: int | None,
        created_by: str | None,
        embedding: Sequence[float] | None = None,
        memory_type: str = "semantic",
        importance: float = 0.5,
        decay_rate: float = 0.01,
        attributes: dict[str, Any] | None = None,
    ) -> tuple[MemoryRecord | None, int]:
        """Insert a memory and its ``create`` history row unless ``scope`` is full.

        One statement counts, inserts and logs (this is the hot write path); call it after
        :meth:`lock_scope`, in a later statement, so the count sees every committed writer.
        Without an embedding the row is queued for re-embedding (``needs_embedding``).

        Returns:
            The new record (``None`` when ``limit`` memories exist) and the count before.
        """
        values: dict[str, Any] = {
            "scope": "server" if isinstance(scope, ServerScope) else "personal",
            "server_id": scope.server_id if isinstance(scope, ServerScope) else None,
            "user_id": scope.user_id if isinstance(scope, PersonalScope) else None,
            "persona_lineage_id": scope.lineage_id,
            "persona_id": persona_id,
            "created_by": created_by,
            "content": content,
            "embedding": list(embedding) if embedding is not None else None,
            "needs_embedding": embedding is None,
            "memory_type": memory_type,
            "importance": importance,
            "decay_rate": decay_rate,
            "attributes": attributes or {},
        }
        columns = Memory.__table__.c
        counted = (
            select(func.count().label("n"))
            .select_from(Memory)
            .where(Memory.status == "active", *self._scope_filter(scope))
            .cte("counted")
        )
        inserted = (
            insert(Memory)
            .from_select(
                list(values),
                select(*(literal(v, columns[k].type) for k, v in values.items())).where(
                    counted.c.n < limit
                ),
            )
            .returning(*_RECORD_COLUMNS)
            .cte("inserted")
        )
        logged = insert(MemoryHistory).from_select(
            ["memory_id", "action", "new_content", "actor_user_id", "persona_id"],
            select(
                inserted.c.id,
                literal("create"),
                inserted.c.content,
                literal(created_by, Text),
                literal(persona_id, Integer),
            ),
        )
        row = self.session.execute(
            select(counted.c.n, *inserted.c)
            .select_from(counted.outerjoin(inserted, true()))
            .add_cte(logged.cte("logged"))
        ).one()
        count, *record = cast(tuple[Any, ...], row)
        return (MemoryRecord(*record) if record[0] is not None else None), int(count)

    def find_for_update(
        self, memory_id: int, scope: ServerScope | PersonalScope
    ) -> MemoryRecord | None:
        """The memory ``memory_id`` if it lies in ``scope``, locked for this transaction."""
        row = self.session.scalars(
            select(Memory)
            .where(Memory.id == memory_id, Memory.status == "active", *self._scope_filter(scope))
            .with_for_update()
        ).first()
        return _record(row) if row is not None else None

    def get(self, memory_id: int) -> MemoryRecord | None:
        """The memory ``memory_id`` in any scope (for hints and tests)."""
        row = self.session.get(Memory, memory_id)
        return _record(row) if row is not None else None

    def update_content(
        self,
        memory_id: int,
        old: str,
        new: str,
        *,
        actor: str | None,
        persona_id: int | None,
        embedding: Sequence[float] | None = None,
    ) -> None:
        """Replace the content and its embedding (``created_at`` kept); log the change."""
        row = self.session.get_one(Memory, memory_id)
        row.content = new
        row.embedding = list(embedding) if embedding is not None else None
        row.needs_embedding = embedding is None
        row.updated_at = func.now()
        self.session.flush()
        self._history(memory_id, "update", old, new, actor, persona_id)

    def delete(
        self, memory_id: int, old: str, *, actor: str | None, persona_id: int | None
    ) -> None:
        """Delete the memory and log its last content."""
        self.session.execute(delete(Memory).where(Memory.id == memory_id))
        self._history(memory_id, "delete", old, None, actor, persona_id)

    def history(self, memory_id: int) -> Sequence[MemoryHistory]:
        """Every change to ``memory_id``, oldest first."""
        return self.session.scalars(
            select(MemoryHistory)
            .where(MemoryHistory.memory_id == memory_id)
            .order_by(MemoryHistory.id)
        ).all()

    def _history(
        self,
        memory_id: int,
        action: str,
        old: str | None,
        new: str | None,
        actor: str | None,
        persona_id: int | None,
    ) -> None:
        self.session.execute(
            insert(MemoryHistory).values(
                memory_id=memory_id,
                action=action,
                old_content=old,
                new_content=new,
                actor_user_id=actor,
                persona_id=persona_id,
            )
        )

    @staticmethod
    def _scope_filter(scope: ServerScope | PersonalScope) -> tuple[ColumnElement[bool], ...]:
        if isinstance(scope, ServerScope):
            return (
                Memory.scope == "server",
                Memory.server_id == scope.server_id,
                Memory.persona_lineage_id == scope.lineage_id,
            )
        return (
            Memory.scope == "personal",
            Memory.user_id == scope.user_id,
            Memory.persona_lineage_id.in_([scope.lineage_id, GLOBAL_LINEAGE]),
        )
