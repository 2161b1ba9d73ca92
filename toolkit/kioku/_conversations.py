"""Conversation threads of the per-turn graph, as far as forgetting a person needs them.

The per-turn graph keeps each conversation's messages in its checkpointer. Forgetting a
person removes their messages (and the replies to them) from the latest state of every
conversation thread and deletes the thread's older checkpoint versions, which still hold
them. Threads are found in the ``checkpoints`` table of the store's database.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AnyMessage, RemoveMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph
from sqlalchemy import Engine, text

from kioku._authorship import person_message_ids
from kioku._redaction import redacted
from kioku._stm.model import STM_THREAD_PREFIX

_THREADS = text(
    "SELECT DISTINCT thread_id FROM checkpoints WHERE checkpoint_ns = '' "
    "AND thread_id NOT LIKE :stm"
)
_STM_PREFIX = STM_THREAD_PREFIX + "%"


class _Conversation(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    kioku_memory_context: list[AnyMessage]
    """Checkpointed by kioku before migration 0006 (rendered memories): cleared."""


def _noop(state: _Conversation) -> dict[str, Any]:
    return {}


def _thread_graph(checkpointer: BaseCheckpointSaver[Any]) -> CompiledStateGraph[Any, Any, Any, Any]:
    """A graph over ``checkpointer``'s threads that reads and rewrites their messages."""
    builder = StateGraph(_Conversation)
    builder.add_node("forget", _noop)
    builder.add_edge(START, "forget")
    return builder.compile(checkpointer=checkpointer)


def person_thread_messages(
    checkpointer: BaseCheckpointSaver[Any],
    thread_ids: Sequence[str],
    user_id: str,
    name_keys: frozenset[str],
) -> dict[str, list[AnyMessage]]:
    """Per thread, the person's messages and the replies to them in its latest state.

    What :func:`forget_in_threads` removes for that person
    (:func:`kioku._authorship.person_message_ids`), read without changing anything.
    """
    graph = _thread_graph(checkpointer)
    found: dict[str, list[AnyMessage]] = {}
    for thread_id in thread_ids:
        config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
        messages = graph.get_state(config).values.get("messages") or []
        theirs = set(person_message_ids(messages, user_id, name_keys))
        if theirs:
            found[thread_id] = [m for m in messages if m.id in theirs]
    return found


def conversation_threads(engine: Engine) -> list[str]:
    """Threads of the checkpointer on ``engine``'s database other than short-term memory."""
    with engine.connect() as connection:
        return list(connection.execute(_THREADS, {"stm": _STM_PREFIX}).scalars())


def forget_in_threads(
    checkpointer: BaseCheckpointSaver[Any],
    thread_ids: Sequence[str],
    *,
    user_id: str | None = None,
    name_keys: frozenset[str] = frozenset(),
    fragments: frozenset[str] = frozenset(),
) -> int:
    """Remove a person's messages and redact erased memory text in ``thread_ids``.

    The person's messages (and the replies to them, see
    :func:`kioku._authorship.person_message_ids`) are removed; the bot's messages that
    repeat an erased memory's ``fragments`` are redacted in place. Only the ``messages``
    channel is rewritten (other channels keep their values). Then every thread keeps
    only its latest checkpoint: older ones hold the old text, and also messages the
    per-turn graph has since trimmed from the latest state (those are gone from it, so
    an unchanged latest state says nothing about older ones). Returns how many messages
    were removed or redacted in the latest states.
    """
    graph = _thread_graph(checkpointer)
    changed = 0
    for thread_id in thread_ids:
        config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
        values = graph.get_state(config).values
        messages = values.get("messages") or []
        doomed = person_message_ids(messages, user_id, name_keys) if user_id else []
        kept = [m for m in messages if m.id not in set(doomed)]
        rewritten = redacted(kept, fragments, name_keys if user_id else frozenset())
        stale_context = bool(values.get("kioku_memory_context"))
        if not (doomed or rewritten or stale_context):
            continue
        update: dict[str, Any] = {"messages": [*(RemoveMessage(id=i) for i in doomed), *rewritten]}
        if stale_context:
            update["kioku_memory_context"] = []
        graph.update_state(config, update, as_node="forget")
        changed += len(doomed) + len(rewritten)
    checkpointer.prune(list(thread_ids), strategy="keep_latest")
    return changed
