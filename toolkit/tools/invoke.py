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
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from toolkit.context import TurnContext


@dataclass(frozen=True, slots=True)
class ToolCallOutcome:
    """The tool message a call produced and what the tool wrote to the custom stream."""

    message: ToolMessage
    custom_events: list[Any]


def run_tool_call(
    tools: Sequence[BaseTool],
    name: str,
    arguments: Mapping[str, Any],
    context: TurnContext | None,
) -> ToolCallOutcome:
    """Execute one tool call named ``name`` as a ``ToolNode`` inside a graph would."""
    builder = StateGraph(MessagesState, context_schema=TurnContext)
    builder.add_node("tools", ToolNode(list(tools)))
    builder.add_edge(START, "tools")
    graph = builder.compile()
    call_id = f"call_{uuid.uuid4().hex[:12]}"
    request = AIMessage(
        content="", tool_calls=[{"name": name, "args": dict(arguments), "id": call_id}]
    )
    custom: list[Any] = []
    last: dict[str, Any] = {}
    for mode, chunk in graph.stream(
        {"messages": [request]}, context=context, stream_mode=["values", "custom"]
    ):
        if mode == "custom":
            custom.append(chunk)
        elif isinstance(chunk, dict):
            last = chunk
    message = last["messages"][-1]
    if not isinstance(message, ToolMessage) or message.tool_call_id != call_id:
        raise RuntimeError(f"tool node returned no answer to {name}")
    return ToolCallOutcome(message, custom)
