"""A memory as the rest of kioku sees it, detached from any session."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


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
    event_time: datetime | None
    """When what it records happened, if it says (``None``: when it was saved)."""
    happened_at: datetime
    """When what it records happened: its event time, else when it was saved (the column
    ``memories.happened_at``, where this is defined)."""
    memory_type: str = "semantic"
    """``semantic``, ``episodic``, ``procedural`` … (typed memories)."""
