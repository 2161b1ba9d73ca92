"""Context items: what the model will see, block by block."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

Role = Literal["system", "user", "assistant"]

SYSTEM_PROMPT = "system_prompt"
SERVER_MEMORIES = "server_memories"
PERSONAL_MEMORIES = "personal_memories"
STM_OTHER_CHANNELS = "stm_other_channels"
STM_SAME_CHANNEL = "stm_same_channel"
STM_HINT = "stm_hint"
STM_CREATE_DIRECTIVE = "stm_create_directive"
DIALOGUE = "dialogue"


@dataclass(frozen=True, slots=True)
class ContextItem:
    """One piece of context: role, text, block tag and token count."""

    role: Role
    text: str
    tag: str
    tokens: int

    def to_message(self) -> BaseMessage:
        """The LangChain message for this item."""
        tag = {"kioku_tag": self.tag}
        if self.role == "system":
            return SystemMessage(content=self.text, additional_kwargs=tag)
        if self.role == "assistant":
            return AIMessage(content=self.text, additional_kwargs=tag)
        return HumanMessage(content=self.text, additional_kwargs=tag)


@dataclass(frozen=True)
class BuiltContext:
    """The assembled context and its accounting."""

    items: tuple[ContextItem, ...]
    dialogue: tuple[BaseMessage, ...]
    """The conversation, with the tail directive (if any) already inserted."""
    tokens: dict[str, int] = field(default_factory=dict)
    """Token count per block tag."""
    omitted: dict[str, int] = field(default_factory=dict)
    """Items left out per block because of its token budget."""
    failed_stages: tuple[str, ...] = ()
    """Stages that raised and contributed nothing."""
    tail_directive: ContextItem | None = None
    """The lower-priority directive already inserted into ``dialogue``, if any."""
    retrieval: tuple[str, ...] = ()
    """Blocks that overflowed (offer the search tool), filled by relevance to the message
    when there is one, else with the newest memories."""

    def messages(self) -> list[BaseMessage]:
        """Memory items followed by the dialogue, ready for a chat model."""
        return [item.to_message() for item in self.items] + list(self.dialogue)

    def render(self) -> str:
        """A readable dump (``[role/tag] text``) for snapshots and inspection."""
        lines = [f"[{i.role}/{i.tag} · {i.tokens} tokens]\n{i.text}" for i in self.items]
        for message in self.dialogue:
            tag = message.additional_kwargs.get("kioku_tag", DIALOGUE)
            lines.append(f"[{message.type}/{tag}]\n{message.content}")
        return "\n\n".join(lines)


def total(items: Sequence[ContextItem]) -> int:
    """Sum of token counts."""
    return sum(item.tokens for item in items)
