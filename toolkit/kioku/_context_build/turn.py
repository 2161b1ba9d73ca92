"""What a build is told of its turn: its facts, and where its dialogue takes a directive."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from langchain_core.messages import AIMessage, BaseMessage

from kioku._authorship import is_user_message


@dataclass(frozen=True)
class TurnFacts:
    """What the turn tells the build besides its context and dialogue."""

    system_prompt: str
    ltm_intent: bool
    stm_updated: bool
    private_recent: bool
    now: datetime


def latest_user_text(dialogue: Sequence[BaseMessage]) -> str:
    """Text of the latest user message (the query when memories must be chosen)."""
    for message in reversed(dialogue):
        if is_user_message(message):
            return message.text
    return ""


def insert_tail_directive(
    dialogue: Sequence[BaseMessage], directive: BaseMessage
) -> list[BaseMessage]:
    """Insert ``directive`` just before the latest user/assistant pair of ``dialogue``."""
    messages = list(dialogue)
    position = len(messages)
    for index in range(len(messages) - 1, -1, -1):
        if is_user_message(messages[index]):
            position = index
            if index > 0 and isinstance(messages[index - 1], AIMessage):
                position = index - 1
            break
    messages.insert(position, directive)
    return messages
