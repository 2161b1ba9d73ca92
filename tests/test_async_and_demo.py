"""The async tool path and the README demo."""

from __future__ import annotations

import asyncio
import io
import json

from langchain_core.messages import AIMessage
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from rich.console import Console

from kioku import KiokuStore, TurnContext, long_term_memory_tools
from kioku._demo import run_demo
from tests.helpers import make_world


def test_tools_work_through_ainvoke(store: KiokuStore) -> None:
    world = make_world(store)
    builder = StateGraph(MessagesState, context_schema=TurnContext)
    builder.add_node("tools", ToolNode(long_term_memory_tools(store)))
    builder.add_edge(START, "tools")
    graph = builder.compile()
    calls = [
        {
            "name": "create_long_term_memory",
            "args": {"memory_content": "a", "memory_scope": "server_wide"},
            "id": "1",
        },
        {
            "name": "update_long_term_memory",
            "args": {"memory_id": "nope", "memory_content": "b"},
            "id": "2",
        },
    ]

    async def go() -> list[dict[str, str]]:
        state = await graph.ainvoke(
            {"messages": [AIMessage(content="", tool_calls=calls)]}, context=world.context()
        )
        return [json.loads(m.content) for m in state["messages"][1:]]

    first, second = asyncio.run(go())
    assert first["status"] == "memory_saved_successfully"
    assert second["status"] == "memory_update_failed_invalid_args"


def test_demo_runs_and_is_repeatable(store: KiokuStore) -> None:
    for _ in range(2):
        out = io.StringIO()
        results = run_demo(store, Console(file=out, width=100))
        statuses = [r["status"] for r in results]
        assert statuses == [
            "memory_saved_successfully",
            "memory_save_failed_privacy_restricted",
            "memory_saved_successfully",
            "memory_updated_successfully",
            "short_term_memory_updated_successfully",
            "memory_deleted_successfully",
        ]
        text = out.getvalue()
        assert "Kioku's Memories about Tea House" in text
        assert "- Memories: ID:" in text and "Alice loves jasmine tea" in text
        assert "remembers a recent conversation in #general" in text
        assert "short-term memory of #general" in text
        assert "tokens per context block" in text and "scripted" in text
