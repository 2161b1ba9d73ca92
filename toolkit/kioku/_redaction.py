"""Finding remembered text again where the bot repeated it: pure rules for erasure.

When a memory is erased, its text may still sit where the bot used it: tool-call
arguments, tool results, search results, replies. A memory's *fragments* (its text
between ``{user}``/``{bot}`` tokens, long enough not to match everyday words) identify
those places, whatever name a token was rendered as.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Sequence

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from kioku._memory.text import as_data, normalise_name

MIN_FRAGMENT = 8
"""Shorter fragments are left alone: they would match ordinary words."""
REDACTED = "(redacted: this referred to something that has been erased)"
_TOKENS = re.compile(r"\{(?:user|bot|char)\}")
SUMMARY_TOOL = "update_short_term_memory"


def memory_fragments(contents: Iterable[str]) -> frozenset[str]:
    """The searchable pieces of memory texts (between tokens, at least ``MIN_FRAGMENT``).

    Each piece also in the forms the bot repeats it: rendered as data (search results,
    context) and escaped inside JSON (tool results).
    """
    found: set[str] = set()
    for content in contents:
        for piece in (p.strip() for p in _TOKENS.split(content)):
            if len(piece) < MIN_FRAGMENT:
                continue
            found |= {piece, as_data(piece), json.dumps(piece)[1:-1]}
            found.add(json.dumps(piece, ensure_ascii=False)[1:-1])
    return frozenset(f for f in found if len(f) >= MIN_FRAGMENT)


def mentions(text: str, fragments: frozenset[str]) -> bool:
    """Whether ``text`` contains one of ``fragments``."""
    return any(fragment in text for fragment in fragments)


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def bot_text(message: BaseMessage) -> str | None:
    """All the text of a bot-made message (reply, tool calls, tool result); else ``None``."""
    if not isinstance(message, AIMessage | ToolMessage):
        return None
    parts = [*_strings(message.content), *_strings(message.additional_kwargs)]
    if isinstance(message, AIMessage):
        parts += _strings([call["args"] for call in message.tool_calls])
    return "\n".join(parts)


def names_person(text: str, name_keys: frozenset[str]) -> bool:
    """Whether ``text`` names the person (one of their name keys, as a whole word)."""
    folded = normalise_name(text)
    return any(re.search(rf"(?<!\w){re.escape(k)}(?!\w)", folded) for k in name_keys if k)


def _summary_names_person(message: BaseMessage, name_keys: frozenset[str]) -> bool:
    """A short-term memory summary the bot wrote that names the person (it may retell them)."""
    if not isinstance(message, AIMessage) or not name_keys:
        return False
    summaries = [c["args"] for c in message.tool_calls if c["name"] == SUMMARY_TOOL]
    return names_person(" ".join(_strings(summaries)), name_keys)


def redacted(
    messages: Sequence[BaseMessage],
    fragments: frozenset[str],
    name_keys: frozenset[str] = frozenset(),
) -> list[BaseMessage]:
    """Copies (same ids) of the bot's messages to clear, their text removed.

    Those repeating an erased memory (``fragments``), and short-term memory summaries the
    bot wrote naming the erased person (``name_keys``). Tool calls keep their ids and
    names (so every result still answers its call); their arguments, the results and
    replies lose their text.
    """
    found: list[BaseMessage] = []
    for message in messages:
        text = bot_text(message)
        if text is None:
            continue
        if not (mentions(text, fragments) or _summary_names_person(message, name_keys)):
            continue
        update: dict[str, object] = {"content": REDACTED, "additional_kwargs": {}}
        if isinstance(message, AIMessage):
            update["tool_calls"] = [{**call, "args": {}} for call in message.tool_calls]
        if isinstance(message, ToolMessage):
            update["content"] = json.dumps({"status": "redacted", "reason": REDACTED})
            update["artifact"] = None
        found.append(message.model_copy(update=update))
    return found
