"""Finding remembered text again where the bot repeated it: pure rules for erasure.

When a memory is erased, its text may still sit where the bot used it: tool-call
arguments, tool results, search results, replies. A memory's *fragments* (its text
between ``{user}``/``{bot}`` tokens, long enough not to match everyday words) identify
those places, whatever name a token was rendered as.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

MIN_FRAGMENT = 8
"""Shorter fragments are left alone: they would match ordinary words."""
REDACTED = "(redacted: this referred to something that has been erased)"
_TOKENS = re.compile(r"\{(?:user|bot|char)\}")


def memory_fragments(contents: Iterable[str]) -> frozenset[str]:
    """The searchable pieces of memory texts (between tokens, at least ``MIN_FRAGMENT``)."""
    return frozenset(
        piece
        for content in contents
        for piece in (p.strip() for p in _TOKENS.split(content))
        if len(piece) >= MIN_FRAGMENT
    )


def mentions(text: str, fragments: frozenset[str]) -> bool:
    """Whether ``text`` contains one of ``fragments``."""
    return any(fragment in text for fragment in fragments)


def bot_text(message: BaseMessage) -> str | None:
    """All the text of a bot-made message (reply, tool calls, tool result); else ``None``."""
    if not isinstance(message, AIMessage | ToolMessage):
        return None
    parts = [str(message.content), json.dumps(message.additional_kwargs, default=str)]
    if isinstance(message, AIMessage):
        parts.append(json.dumps([call["args"] for call in message.tool_calls], default=str))
    return "\n".join(parts)


def redacted(messages: Sequence[BaseMessage], fragments: frozenset[str]) -> list[BaseMessage]:
    """Copies (same ids) of the bot's messages that repeat an erased memory, text removed.

    Tool calls keep their ids and names (so every result still answers its call); their
    arguments, the results and replies lose their text.
    """
    if not fragments:
        return []
    found: list[BaseMessage] = []
    for message in messages:
        text = bot_text(message)
        if text is None or not mentions(text, fragments):
            continue
        update: dict[str, object] = {"content": REDACTED, "additional_kwargs": {}}
        if isinstance(message, AIMessage):
            update["tool_calls"] = [{**call, "args": {}} for call in message.tool_calls]
        if isinstance(message, ToolMessage):
            update["content"] = json.dumps({"status": "redacted", "reason": REDACTED})
            update["artifact"] = None
        found.append(message.model_copy(update=update))
    return found
