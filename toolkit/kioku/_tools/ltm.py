"""``create_long_term_memory`` and ``update_long_term_memory`` as LangChain ``StructuredTool``s.

The model-facing schemas are derived from the arguments' pydantic models
(:mod:`kioku._memory.arguments`) but given to LangChain as JSON schemas, so malformed
arguments reach the flow, which validates them with the same model and answers with
``…_invalid_args`` instead of failing validation inside the tool node. The turn context
arrives through LangGraph's ``ToolRuntime``.

Each call is one unit of work in one ``Session``. Called asynchronously (``ainvoke``, an
async graph or agent), the same function runs in a worker thread: the flow's database
work, the embedder, the user directory and the notifier never block the event loop, and
concurrent calls overlap (see ``ArgumentSafeTool``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from langchain_core.tools import StructuredTool
from langgraph.prebuilt import ToolRuntime

from kioku._context import latest_sent_at, turn_context_of
from kioku._deps import HasDeps, KiokuDeps
from kioku._domain.statuses import CreateStatus, UpdateStatus
from kioku._memory.arguments import CreateArgs, ToolArguments, UpdateArgs
from kioku._memory.create import create_long_term_memory
from kioku._memory.create_typed import create_memory
from kioku._memory.flow import Flow
from kioku._memory.results import ToolResult
from kioku._memory.typed_arguments import CreateMemoryArgs
from kioku._memory.update import update_long_term_memory
from kioku._tools.safe import ArgumentSafeTool
from kioku._tools.schema import model_facing_schema

logger = logging.getLogger(__name__)

CREATE_DESCRIPTION = (
    "Save a NEW, distinct, durable fact or preference to long-term memory so you remember it "
    "in future conversations. Use it when someone asks you to remember something, or when "
    "you learn something lasting that will clearly matter later. Write in the third person "
    "and use {user} for the person the memory is about and {bot} for yourself; never "
    "hard-code names. Do not save facts that are already in your memories (update those "
    "instead), small talk, or personal identifying data (real names, addresses, contact "
    "details); a repeat of a saved fact answers memory_save_failed_duplicate with its ID. "
    "Returns JSON with a status and, on failure, a reason to tell the user."
)
UPDATE_DESCRIPTION = (
    "Correct or delete an existing long-term memory, identified by the N of the ID:N shown "
    "in your context. memory_content is the full replacement text (use {user} and {bot} "
    "tokens, third person); an empty string deletes the memory. Pass target_user only for "
    "a personal memory, naming its owner as shown in the conversation; omit it for "
    "server-wide memories. Pass event_time only to correct when it happened. Returns JSON "
    "with a status and, on failure, a reason."
)


def _build(
    flow: Flow,
    deps: KiokuDeps,
    *,
    name: str,
    description: str,
    model: type[ToolArguments],
    internal_error: str,
) -> StructuredTool:
    """Wrap ``flow`` as a tool; the session (the unit of work) is opened here, at the edge."""

    def run(runtime: ToolRuntime | None = None, **arguments: Any) -> str:
        context, writer = _unpack(runtime)
        result = None
        try:
            with deps.sessions() as session:
                result = flow(session, deps, context, arguments, stream_writer=writer)
        except Exception:
            logger.exception("kioku: %s failed while opening or closing its session", name)
        return _answer(result, internal_error)

    return ArgumentSafeTool.from_function(
        func=run,
        name=name,
        description=description,
        args_schema=model_facing_schema(model),
        infer_schema=False,
    )


def _unpack(runtime: ToolRuntime | None) -> tuple[object, Callable[[Any], None] | None]:
    if runtime is None:
        return None, None
    context = turn_context_of(runtime.context)
    if context is None:
        return runtime.context, runtime.stream_writer  # the flow says what is missing
    if context.message_time is None:
        state = runtime.state
        messages = (
            state.get("messages") if isinstance(state, Mapping) else getattr(state, "messages", ())
        )
        sent = latest_sent_at(messages) if isinstance(messages, Sequence) else None
        if sent is not None:
            context = replace(context, message_time=sent)
    return context, runtime.stream_writer


def _answer(result: ToolResult | None, internal_error: str) -> str:
    # The flows map their own errors; only opening or closing the session can leave no
    # result. A result that exists stands: its transaction had already ended.
    if result is None:
        result = ToolResult(internal_error, "An internal error occurred; nothing was changed.")
    return result.to_json()


def create_long_term_memory_tool(store: HasDeps) -> StructuredTool:
    """Build the ``create_long_term_memory`` tool over ``store``.

    The turn context (:class:`toolkit.TurnContext`) is read from the LangGraph runtime
    of the call, so the same tool object serves every conversation.
    """
    return _build(
        create_long_term_memory,
        store.deps,
        name="create_long_term_memory",
        description=CREATE_DESCRIPTION,
        model=CreateArgs,
        internal_error=CreateStatus.INTERNAL_ERROR,
    )


def update_long_term_memory_tool(store: HasDeps) -> StructuredTool:
    """Build the ``update_long_term_memory`` tool over ``store``."""
    return _build(
        update_long_term_memory,
        store.deps,
        name="update_long_term_memory",
        description=UPDATE_DESCRIPTION,
        model=UpdateArgs,
        internal_error=UpdateStatus.INTERNAL_ERROR,
    )


CREATE_MEMORY_DESCRIPTION = (
    "Create a new typed memory (episodic: something that happened; semantic: a fact; "
    "procedural: how to do something, with steps; strategic: a pattern that works) with "
    "optional type-specific metadata. It is saved server-wide for this conversation's "
    "server and persona. 'embedding' is accepted for compatibility and ignored: kioku "
    "computes embeddings itself."
)


def create_memory_tool(store: HasDeps) -> StructuredTool:
    """Build ``create_memory`` (the typed-memory reference's argument names)."""
    return _build(
        create_memory,
        store.deps,
        name="create_memory",
        description=CREATE_MEMORY_DESCRIPTION,
        model=CreateMemoryArgs,
        internal_error=CreateStatus.INTERNAL_ERROR,
    )


def long_term_memory_tools(store: HasDeps) -> list[StructuredTool]:
    """Both long-term memory tools, ready to bind to a chat model or a ``ToolNode``."""
    return [create_long_term_memory_tool(store), update_long_term_memory_tool(store)]
