"""Answer tool calls a crashed turn left without results (pure message logic).

A turn can stop between the model's tool calls and their results: the process dies,
or the database holding the checkpoints goes away. The next model call would then see
calls without answers, which chat APIs reject. The next turn answers them first.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

INTERRUPTED = "tool_call_interrupted"
INTERRUPTED_REASON = (
    "The turn that made this call ended before its result was recorded; it may or may "
    "not have taken effect. Check (for example by searching your memories) before "
    "repeating it."
)


def unanswered_calls(messages: Sequence[BaseMessage]) -> list[tuple[int, list[str]]]:
    """(index of the AI message, ids of its unanswered tool calls), oldest first."""
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    found = []
    for index, message in enumerate(messages):
        if isinstance(message, AIMessage) and message.tool_calls:
            missing = [c["id"] or "" for c in message.tool_calls if c["id"] not in answered]
            if missing:
                found.append((index, missing))
    return found


def with_answered_calls(messages: Sequence[BaseMessage]) -> list[BaseMessage] | None:
    """``messages`` with an ``interrupted`` result after each unanswered call.

    ``None`` when nothing is missing (the common case: nothing to rewrite).
    """
    gaps = dict(unanswered_calls(messages))
    if not gaps:
        return None
    repaired: list[BaseMessage] = []
    for index, message in enumerate(messages):
        repaired.append(message)
        if index in gaps:
            assert isinstance(message, AIMessage)
            names = {c["id"]: c["name"] for c in message.tool_calls}
            # Results of the same message's answered calls follow it already; the
            # missing ones go right after it, where chat APIs expect every result.
            repaired.extend(
                ToolMessage(
                    content=json.dumps({"status": INTERRUPTED, "reason": INTERRUPTED_REASON}),
                    tool_call_id=call_id,
                    name=names.get(call_id) or "",
                    # An id of its own, so trimming can remove it with its call.
                    id=str(uuid.uuid4()),
                )
                for call_id in gaps[index]
            )
    return repaired


INTERRUPTED_CALLS = "kioku_interrupted_calls"
"""``additional_kwargs`` key of an AI message whose unanswered calls were taken off it."""


def without_unanswered_calls(messages: Sequence[BaseMessage]) -> list[AIMessage]:
    """Copies (same ids) of the AI messages with unanswered calls, those calls taken off.

    For a state that cannot take messages inserted in the middle (an agent's, updated
    through its reducer): each copy replaces its original in place, keeping the calls it
    lost under :data:`INTERRUPTED_CALLS`. ``[]`` when nothing is missing.
    """
    repaired: list[AIMessage] = []
    for index, missing in unanswered_calls(messages):
        message = messages[index]
        assert isinstance(message, AIMessage)
        lost = [call for call in message.tool_calls if (call["id"] or "") in missing]
        kept = [call for call in message.tool_calls if (call["id"] or "") not in missing]
        repaired.append(
            message.model_copy(
                update={
                    "tool_calls": kept,
                    "additional_kwargs": {
                        **message.additional_kwargs,
                        INTERRUPTED_CALLS: [dict(call) for call in lost],
                    },
                }
            )
        )
    return repaired
