"""Limits hold under concurrent writers against the real database (SPEC §2)."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from langchain_core.messages import AIMessage
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from kioku import KiokuStore, TurnContext, create_long_term_memory_tool
from tests.helpers import make_world, run_tool, table_counts


def limit_to_ten(store: KiokuStore) -> None:
    with store.accounts() as accounts:
        accounts.upsert_server("srv-a", max_server_memories=10, max_personal_memories=10)


def test_fifty_threads_against_a_limit_of_ten(store: KiokuStore) -> None:
    world = make_world(store)
    limit_to_ten(store)
    tool = create_long_term_memory_tool(store)
    context = world.context()

    def one(i: int) -> str:
        args = {"memory_content": f"fact {i}", "memory_scope": "server_wide"}
        return str(run_tool(tool, args, context).result["status"])

    with ThreadPoolExecutor(max_workers=50) as pool:
        statuses = list(pool.map(one, range(50)))
    assert statuses.count("memory_saved_successfully") == 10
    assert statuses.count("memory_save_failed_limit_exceeded") == 40
    assert table_counts(store) == (10, 10)


def test_fifty_asyncio_tasks_against_a_personal_limit_of_ten(store: KiokuStore) -> None:
    world = make_world(store)
    limit_to_ten(store)
    builder = StateGraph(MessagesState, context_schema=TurnContext)
    builder.add_node("tools", ToolNode([create_long_term_memory_tool(store)]))
    builder.add_edge(START, "tools")
    graph = builder.compile()
    context = world.context()

    async def one(i: int) -> str:
        call = {
            "name": "create_long_term_memory",
            "args": {
                "memory_content": f"{{user}} fact {i}",
                "memory_scope": "target_user",
                "target_user": "Bob",
            },
            "id": f"call-{i}",
        }
        state: dict[str, Any] = await graph.ainvoke(
            {"messages": [AIMessage(content="", tool_calls=[call])]}, context=context
        )
        return str(json.loads(state["messages"][-1].content)["status"])

    async def all_of_them() -> list[str]:
        return await asyncio.gather(*(one(i) for i in range(50)))

    statuses = asyncio.run(all_of_them())
    assert statuses.count("memory_saved_successfully") == 10
    assert statuses.count("memory_save_failed_limit_exceeded") == 40
    assert table_counts(store) == (10, 10)
