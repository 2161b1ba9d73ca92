"""Memory notices (SPEC §8): what an application shows its users after an LTM write."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, Literal

from kioku._awaiting import resolved

logger = logging.getLogger(__name__)

NoticeKind = Literal["created", "updated", "deleted"]
NoticeScope = Literal["server_wide", "target_user"]

NOTICE_STREAM_TYPE = "kioku.memory_notice"
"""``type`` of the payload written to LangGraph's custom stream."""


@dataclass(frozen=True, slots=True)
class MemoryNotice:
    """A long-term memory was created, updated or deleted."""

    kind: NoticeKind
    scope: NoticeScope
    memory_id: int
    content: str
    """The memory text with ``{user}``/``{bot}`` rendered as names (deleted text for deletes)."""
    persona_name: str
    target_user: str | None
    """Display name of the owner of a personal memory."""
    footer: str
    """A hint for the people reading the notice."""

    def to_stream_payload(self) -> dict[str, Any]:
        """The dict written to ``stream_mode="custom"``."""
        return {"type": NOTICE_STREAM_TYPE, "notice": asdict(self)}


def footer_for(
    kind: str, scope: str, persona_name: str, memory_id: int, personal_enabled: bool
) -> str:
    """Footer wording for a notice."""
    if kind == "deleted":
        return f"{persona_name} forgot ID:{memory_id}."
    if scope == "target_user" and not personal_enabled:
        return (
            f"Personal memory ID:{memory_id}. Personal memories are turned off on this server, "
            "so it is not used here."
        )
    return f"ID:{memory_id} · ask {persona_name} to correct or forget it any time."


def emit_notice(
    notice: MemoryNotice,
    *,
    stream_writer: Callable[[Any], None] | None,
    notifier: Callable[[MemoryNotice], object] | None,
) -> None:
    """Send ``notice`` to the custom stream and the notifier; failures are logged only."""
    if stream_writer is not None:
        try:
            stream_writer(notice.to_stream_payload())
        except Exception:
            logger.exception(
                "kioku: writing memory notice %s to the stream failed", notice.memory_id
            )
    if notifier is not None:
        try:
            resolved(notifier(notice))  # an ``async def`` notifier is awaited
        except Exception:
            logger.exception("kioku: memory notice callback failed for ID:%s", notice.memory_id)
