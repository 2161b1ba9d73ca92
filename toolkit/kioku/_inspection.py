"""What kioku remembers, for operators: list, and show with history (plain records).

Operator tools, never offered to the model or to MCP clients: they see every memory the
filters select, whoever it is about. ``KiokuStore.list_memories`` and ``show_memory`` call
these; ``kioku memories …`` prints them. They need only sessions, so that command starts
without LangChain or an embedder (searching is :mod:`kioku._inspection_search`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Select, select
from sqlalchemy.orm import Session, sessionmaker

from kioku._context import server_key
from kioku._db.models import Memory, MemoryHistory

LIST_LIMIT = 100
"""Memories :func:`list_memories` returns unless asked for another number."""


def _plain(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


@dataclass(frozen=True)
class StoredMemory:
    """One memory as stored (``content`` keeps ``{user}``/``{bot}`` placeholders)."""

    id: int
    scope: str
    server_key: str | None
    """The key its server's memories are stored under (``kioku.server_key``); personal: ``None``."""
    user_id: str | None
    persona_lineage_id: int
    memory_type: str
    content: str
    importance: float
    decay_rate: float
    status: str
    created_by: str | None
    created_at: datetime
    updated_at: datetime
    happened_at: datetime
    attributes: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, row: Memory) -> StoredMemory:
        """The record of a ``memories`` row."""
        return cls(
            row.id,
            row.scope,
            row.server_id,
            row.user_id,
            row.persona_lineage_id,
            row.memory_type,
            row.content,
            row.importance,
            row.decay_rate,
            row.status,
            row.created_by,
            row.created_at,
            row.updated_at,
            row.happened_at,
            dict(row.attributes or {}),
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (times as ISO 8601)."""
        return {key: _plain(value) for key, value in asdict(self).items()}


@dataclass(frozen=True)
class HistoryRow:
    """One change to a memory (``old``/``new`` are ``None`` once erased)."""

    memory_id: int
    action: str
    old_content: str | None
    new_content: str | None
    actor_user_id: str | None
    scope: str | None
    owner_id: str | None
    persona_lineage_id: int | None
    erased_at: datetime | None
    created_at: datetime

    @classmethod
    def of(cls, row: MemoryHistory) -> HistoryRow:
        """The record of a ``memory_history`` row."""
        return cls(
            row.memory_id,
            row.action,
            row.old_content,
            row.new_content,
            row.actor_user_id,
            row.scope,
            row.owner_id,
            row.persona_lineage_id,
            row.erased_at,
            row.created_at,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (times as ISO 8601)."""
        return {key: _plain(value) for key, value in asdict(self).items()}


@dataclass(frozen=True)
class MemoryDetail:
    """A memory (``None`` once deleted) and every change to it, oldest first."""

    memory: StoredMemory | None
    history: tuple[HistoryRow, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "memory": self.memory.to_dict() if self.memory is not None else None,
            "history": [row.to_dict() for row in self.history],
        }


@dataclass(frozen=True)
class MemoryFilter:
    """Which memories an operator asks for (every field narrows; none: all)."""

    server_id: str | None = None
    """A server's (or a user's own space's, ``kioku.user_space``) server-wide memories."""
    user_id: str | None = None
    """A person's personal memories."""
    lineage_id: int | None = None
    memory_type: str | None = None
    status: str | None = "active"
    """``"active"``, ``"archived"``, or ``None`` for both."""

    def statement(self, limit: int, offset: int = 0) -> Select[Any]:
        """The ``SELECT`` of these memories, newest first."""
        query = select(Memory)
        if self.server_id is not None:
            query = query.where(
                Memory.scope == "server", Memory.server_id == server_key(self.server_id)
            )
        if self.user_id is not None:
            query = query.where(Memory.scope == "personal", Memory.user_id == self.user_id)
        if self.lineage_id is not None:
            query = query.where(Memory.persona_lineage_id == self.lineage_id)
        if self.memory_type is not None:
            query = query.where(Memory.memory_type == self.memory_type)
        if self.status is not None:
            query = query.where(Memory.status == self.status)
        return (
            query.order_by(Memory.created_at.desc(), Memory.id.desc()).limit(limit).offset(offset)
        )


def list_memories(
    reads: sessionmaker[Session],
    where: MemoryFilter | None = None,
    *,
    limit: int = LIST_LIMIT,
    offset: int = 0,
) -> list[StoredMemory]:
    """The memories ``where`` selects, newest first (at most ``limit``, after ``offset``)."""
    with reads() as session:
        rows = session.scalars((where or MemoryFilter()).statement(limit, offset))
        return [StoredMemory.of(row) for row in rows]


def show_memory(reads: sessionmaker[Session], memory_id: int) -> MemoryDetail:
    """Memory ``memory_id`` (``None`` if deleted) with its whole history."""
    with reads() as session:
        row = session.get(Memory, memory_id)
        history = session.scalars(
            select(MemoryHistory)
            .where(MemoryHistory.memory_id == memory_id)
            .order_by(MemoryHistory.created_at, MemoryHistory.id)
        )
        return MemoryDetail(
            StoredMemory.of(row) if row is not None else None,
            tuple(HistoryRow.of(entry) for entry in history),
        )
