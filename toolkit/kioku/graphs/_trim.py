"""Keep a conversation thread bounded (pure message logic).

Short-term memory captures every turn's dialogue, so the graph's thread needs only the
recent messages the model is shown. After capture, the oldest whole turns are removed
(``RemoveMessage``) so the thread keeps at most ``keep`` messages:

- the kept part starts at a user message, so an assistant message's tool calls are
  never separated from their results;
- the latest turn (from its user message on) is always kept whole, even when it alone
  is longer than ``keep``;
- system messages at the very start of the thread (seeded by an application) are kept
  and do not count.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)


def leading_system(messages: Sequence[BaseMessage]) -> int:
    """How many system messages open the thread."""
    count = 0
    while count < len(messages) and isinstance(messages[count], SystemMessage):
        count += 1
    return count


def trim_start(messages: Sequence[BaseMessage], keep: int) -> int:
    """Index where the kept conversation starts.

    Messages before it (after any leading system messages) are dropped; it is
    ``leading_system(messages)`` when nothing is.

    The thread is walked from its end and only as far back as needed (``keep``
    messages, or the latest turn when that is longer), so the cost does not grow with
    the thread.
    """
    head = leading_system(messages)
    if len(messages) - head <= keep:
        return head
    limit = len(messages) - keep
    pending: set[str] = set()  # results whose call has not been seen yet (walking back)
    best: int | None = None
    for index in range(len(messages) - 1, head - 1, -1):
        if best is not None and index < limit:
            return best
        message = messages[index]
        if isinstance(message, ToolMessage):
            pending.add(message.tool_call_id)
        elif isinstance(message, AIMessage):
            pending.difference_update(call["id"] or "" for call in message.tool_calls)
        elif isinstance(message, HumanMessage) and not pending:
            if index < limit:
                return index  # the latest turn alone is longer than ``keep``
            best = index  # within the budget: an earlier start may still fit
    return best if best is not None else head


def trim_removals(messages: Sequence[BaseMessage], keep: int) -> list[RemoveMessage]:
    """``RemoveMessage`` for each message :func:`trim_start` drops (``[]``: none)."""
    start = trim_start(messages, keep)
    head = leading_system(messages)
    return [RemoveMessage(id=m.id) for m in messages[head:start] if m.id is not None]
