"""The JSON object every tool returns to the model (SPEC §5)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class ToolResult:
    """A tool outcome: a status, a reason the model can act on, and data."""

    status: str
    """One of the documented status strings."""
    reason: str | None = None
    """Why it failed (or a short confirmation), written for the model."""
    data: Mapping[str, Any] = field(default_factory=dict)
    """Extra fields, e.g. ``memory_id``."""

    def to_dict(self) -> dict[str, Any]:
        """Return ``{status, reason?, ...data}``."""
        payload: dict[str, Any] = {"status": self.status}
        if self.reason is not None:
            payload["reason"] = self.reason
        payload.update(self.data)
        return payload

    def to_json(self) -> str:
        """Serialise for a ``ToolMessage`` (non-ASCII kept readable)."""
        return json.dumps(self.to_dict(), ensure_ascii=False, default=str)
