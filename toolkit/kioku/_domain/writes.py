"""What a memory write takes and gives back: plain records, no database."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from kioku._domain.records import MemoryRecord
from kioku._domain.scopes import PersonalScope, ServerScope, VersionKey


@dataclass(frozen=True, slots=True)
class NewMemory:
    """A memory to save in ``scope``, with what the write needs to check and attribute it."""

    scope: ServerScope | PersonalScope
    content: str
    server_key: str
    """The server (or DM key) the memory is saved under; registered if it has no row."""
    server_name: str | None
    limit: int
    """How many memories the scope may hold (decided: :mod:`kioku._memory.write_decision`)."""
    owner_name: str | None = None
    """Display name of a personal memory's owner (their user row is created if missing)."""
    owner_key: str | None = None
    """``owner_name`` normalised for matching."""
    persona_id: int | None = None
    created_by: str | None = None
    embedding: Sequence[float] | None = None
    embedder: str | None = None
    """The model that made ``embedding``: stored only while the database records it."""
    memory_type: str = "semantic"
    importance: float = 0.5
    decay_rate: float = 0.01
    attributes: dict[str, Any] = field(default_factory=dict)
    check_repeat: bool = True
    """Answer an exact repeat with the existing memory (``already_saved``). Off for a scope
    the turn cannot see, whose contents no answer may confirm."""
    about_user_id: str | None = None
    """The bridged user a server-wide memory is about (saved under their display name):
    recorded with the memory, so erasing that user removes it."""


@dataclass(frozen=True, slots=True)
class CreateOutcome:
    """What :meth:`kioku._memory.repository.MemoryRepository.create_within_limit` did."""

    outcome: Literal["saved", "already_saved", "limit_reached"]
    memory_id: int | None
    """The new memory's id when ``outcome`` is ``saved``; the existing one's when the scope
    already held exactly this content (``already_saved``)."""
    count: int | None
    """Active memories in the scope before the write (``None`` for an exact repeat)."""
    vector_refused: bool = False
    """The write sent a vector and the database stored none: it records another embedder
    (the memory is queued for ``kioku reembed``)."""


@dataclass(frozen=True, slots=True)
class ContentChange:
    """A committed-to-be content update and the scope version it moved from and to."""

    memory_id: int
    content: str
    changed_at: datetime | None
    key: VersionKey | None
    """The ``memory_counts`` key of the memory's scope."""
    version_before: int | None
    version_after: int | None


@dataclass(frozen=True, slots=True)
class ScopedUpdate:
    """What :meth:`kioku._memory.repository.MemoryRepository.update_in_scope` read and did."""

    self_teaching_enabled: bool
    personal_memories_enabled: bool
    updated: tuple[MemoryRecord, ContentChange] | None
    """The row as it was and the change; ``None`` when nothing was changed (the settings
    forbade it, or the memory is not in the scope)."""
    vector_refused: bool = False
    """As :attr:`CreateOutcome.vector_refused`."""
