"""A server's memory settings, with the defaults of servers without a row."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """Per-server memory settings (SPEC §12), with defaults for servers without a row."""

    self_teaching_enabled: bool = False
    """Whether the model may write long-term memories here."""
    personal_memories_enabled: bool = True
    """Whether personal memories are rendered and mentioned here."""
    private_channel_ids: frozenset[str] = field(default_factory=frozenset)
    """Channels whose short-term memory is never recalled elsewhere."""
    stm_privacy_bypass: bool = False
    """Recall private channels' short-term memory anyway."""
    max_server_memories: int | None = None
    """Override of ``MAX_SERVER_MEMORIES`` for this server."""
    max_personal_memories: int | None = None
    """Override of ``MAX_PERSONAL_MEMORIES`` for this server."""

    def to_dict(self) -> dict[str, object]:
        """The settings as JSON-ready values (channel ids sorted)."""
        return {
            "self_teaching_enabled": self.self_teaching_enabled,
            "personal_memories_enabled": self.personal_memories_enabled,
            "private_channel_ids": sorted(self.private_channel_ids),
            "stm_privacy_bypass": self.stm_privacy_bypass,
            "max_server_memories": self.max_server_memories,
            "max_personal_memories": self.max_personal_memories,
        }
