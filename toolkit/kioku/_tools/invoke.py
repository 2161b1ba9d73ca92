"""Run model tool calls through LangGraph's ``ToolNode`` outside an agent loop.

Useful in scripts, notebooks and tests: each call goes through exactly the code path
an agent uses (runtime injection, custom stream), without a chat model.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.graph import START, StateGraph
from langgraph.prebuilt import ToolNode

from kioku._context import TurnContext
from kioku._state import TurnState


@dataclass(frozen=True, slots=True)
class ToolCallOutcome:
    """The tool message a call produced and what the tool wrote to the custom stream."""

    message: ToolMessage
    custom_events: list[Any]


def _single_call_graph(tools: Sequence[BaseTool]) -> Any:
    builder = StateGraph(TurnState, context_schema=TurnContext)
    builder.add_node("tools", ToolNode(list(tools)))
    builder.add_edge(START, "tools")
    return builder.compile()


def _request(
    name: str, arguments: Mapping[str, Any], state: Mapping[str, Any] | None
) -> tuple[str, dict[str, Any]]:
    call_id = f"call_{uuid.uuid4().hex[:12]}"
    message = AIMessage(
        content="", tool_calls=[{"name": name, "args": dict(arguments), "id": call_id}]
    )
    return call_id, {**(state or {}), "messages": [message]}


def _outcome(name: str, call_id: str, last: dict[str, Any], custom: list[Any]) -> ToolCallOutcome:
    message = last["messages"][-1]
    if not isinstance(message, ToolMessage) or message.tool_call_id != call_id:
        raise RuntimeError(f"tool node returned no answer to {name}")
    return ToolCallOutcome(message, custom)


def run_tool_call(
    tools: Sequence[BaseTool],
    name: str,
    arguments: Mapping[str, Any],
    context: TurnContext | None,
    *,
    state: Mapping[str, Any] | None = None,
) -> ToolCallOutcome:
    """Execute one tool call named ``name`` as a ``ToolNode`` inside a graph would.

    ``state`` adds graph-state values (e.g. the per-turn flags of :class:`TurnState`).
    """
    call_id, values = _request(name, arguments, state)
    custom: list[Any] = []
    last: dict[str, Any] = {}
    for mode, chunk in _single_call_graph(tools).stream(
        values, context=context, stream_mode=["values", "custom"]
    ):
        if mode == "custom":
            custom.append(chunk)
        elif isinstance(chunk, dict):
            last = chunk
    return _outcome(name, call_id, last, custom)


async def arun_tool_call(
    tools: Sequence[BaseTool],
    name: str,
    arguments: Mapping[str, Any],
    context: TurnContext | None,
    *,
    state: Mapping[str, Any] | None = None,
) -> ToolCallOutcome:
    """Async twin of :func:`run_tool_call` (the tools run their async path)."""
    call_id, values = _request(name, arguments, state)
    custom: list[Any] = []
    last: dict[str, Any] = {}
    async for mode, chunk in _single_call_graph(tools).astream(
        values, context=context, stream_mode=["values", "custom"]
    ):
        if mode == "custom":
            custom.append(chunk)
        elif isinstance(chunk, dict):
            last = chunk
    return _outcome(name, call_id, last, custom)
