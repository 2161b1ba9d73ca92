"""LangMem's memory tools on ``kioku.KiokuLangGraphStore`` inside a ``create_agent`` agent
(a scripted model, kioku's hashing embeddings: no network)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.graph.state import CompiledStateGraph
from langmem import create_manage_memory_tool, create_search_memory_tool
from sqlalchemy import text

from kioku import KiokuLangGraphStore, KiokuStore
from kioku.testing import Script, ScriptedChatModel, call_tool, say

NAMESPACE = ("memories", "{langgraph_user_id}")
"""LangMem's default namespace."""


def _agent(store: KiokuStore, script: Script) -> tuple[Any, KiokuLangGraphStore]:
    lg_store = KiokuLangGraphStore(store, user_label=1, index={"fields": ["content"]})
    agent: CompiledStateGraph[Any, Any, Any, Any] = create_agent(
        ScriptedChatModel(script=script),
        tools=[
            create_manage_memory_tool(namespace=NAMESPACE),
            create_search_memory_tool(namespace=NAMESPACE),
        ],
        store=lg_store,
    )
    return agent, lg_store


def _update_the_created(prompt: Sequence[BaseMessage], offered: tuple[str, ...]) -> AIMessage:
    """Update the memory the last tool call created (its id is in the tool's answer)."""
    said = next(m.text for m in reversed(prompt) if isinstance(m, ToolMessage))
    found = re.search(r"created memory (\S+)", said)
    assert found is not None, said
    return call_tool(
        "manage_memory", content="likes jasmine tea, hot", action="update", id=found.group(1)
    )


def _config(user: str) -> dict[str, Any]:
    return {"configurable": {"langgraph_user_id": user}}


def test_langmem_tools_on_kioku_in_create_agent(store: KiokuStore) -> None:
    script = Script(
        [
            call_tool("manage_memory", content="likes jasmine tea", action="create"),
            _update_the_created,
            say("Noted."),
            call_tool("search_memory", query="what tea does the user like"),
            say("You like jasmine tea."),
        ]
    )
    agent, lg_store = _agent(store, script)
    agent.invoke({"messages": [HumanMessage("I like jasmine tea")]}, _config("u-1"))
    [item] = lg_store.search(("memories", "u-1"))
    assert item.value == {"content": "likes jasmine tea, hot"}
    assert lg_store.search(("memories", "u-2")) == []

    result = agent.invoke({"messages": [HumanMessage("what tea do I like?")]}, _config("u-1"))
    [answer] = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert "likes jasmine tea, hot" in answer.text and item.key in answer.text

    with store.engine.connect() as connection:
        history = connection.execute(
            text("SELECT action, new_content, scope, owner_id FROM memory_history ORDER BY id")
        ).all()
    assert [tuple(row) for row in history] == [
        ("create", "likes jasmine tea", "personal", "u-1"),
        ("update", "likes jasmine tea, hot", "personal", "u-1"),
    ]


def test_langmem_tools_async_and_per_user(store: KiokuStore) -> None:
    script = Script(
        [
            call_tool("manage_memory", content="plays the cello"),
            say("Noted."),
            call_tool("search_memory", query="cello"),
            say("Nothing about you."),
        ]
    )
    agent, lg_store = _agent(store, script)

    async def run() -> list[Any]:
        await agent.ainvoke({"messages": [HumanMessage("I play the cello")]}, _config("u-1"))
        found = await agent.ainvoke({"messages": [HumanMessage("cello?")]}, _config("u-2"))
        return [m for m in found["messages"] if isinstance(m, ToolMessage)]

    [answer] = asyncio.run(run())
    assert answer.text == "[]"  # u-2 sees nothing of u-1's
    [item] = lg_store.search(("memories", "u-1"), query="cello")
    assert item.value == {"content": "plays the cello"} and item.score is not None
