"""update_short_term_memory: availability, re-checks at execution, truncation, both entries."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from kioku import KiokuStore
from kioku._stm.availability import stm_tool_refusal
from kioku._stm.store import ShortTermMemory
from kioku._tools.invoke import run_tool_call
from kioku._tools.stm import update_short_term_memory_tool
from tests.helpers import Clock, World, make_world, msgs, server_key, user_key


@pytest.fixture
def world(store: KiokuStore) -> World:
    return make_world(store)


@pytest.fixture
def stm(store: KiokuStore) -> ShortTermMemory:
    return ShortTermMemory(store, store.checkpointer(), clock=Clock())


def call(
    stm: ShortTermMemory,
    world: World,
    args: dict[str, Any],
    state: dict[str, Any] | None = None,
    **ctx: Any,
) -> dict[str, Any]:
    outcome = run_tool_call(
        [update_short_term_memory_tool(stm)],
        "update_short_term_memory",
        args,
        world.context(**ctx),
        state=state,
    )
    assert outcome.custom_events == []  # STM writes are silent
    return dict(json.loads(str(outcome.message.content)))


def test_summary_written_to_both_entries_with_messages_kept(
    stm: ShortTermMemory, world: World
) -> None:
    stm.capture(world.context(), msgs("hi", "hello"))
    result = call(stm, world, {"summary": "  Alice greeted {bot}.  "})
    assert result["status"] == "short_term_memory_updated_successfully"
    for key in (server_key(world), user_key(world)):
        entry = stm.get(key)
        assert entry is not None and entry.summary == "Alice greeted {bot}."
        assert [m.text for m in entry.messages] == ["hi", "hello"]
    assert world.notices == []


def test_truncated_silently(stm: ShortTermMemory, world: World) -> None:
    result = call(stm, world, {"summary": "y" * 1600})
    assert result["status"] == "short_term_memory_updated_successfully"
    assert result["summary_length"] == 1500
    entry = stm.get(server_key(world))
    assert entry is not None and entry.summary == "y" * 1500


@pytest.mark.parametrize(
    "args", [{}, {"summary": ""}, {"summary": "   "}, {"summary": 5}, {"summary": "x", "extra": 1}]
)
def test_invalid_args(stm: ShortTermMemory, world: World, args: dict[str, Any]) -> None:
    assert call(stm, world, args)["status"] == "short_term_memory_update_failed_invalid_args"
    assert stm.get(server_key(world)) is None


@pytest.mark.parametrize(
    ("state", "ctx", "why"),
    [
        ({"kioku_ltm_intent": True}, {}, "create_long_term_memory"),
        ({"kioku_stm_updated": True}, {}, "already updated"),
        ({}, {"has_tools": False}, "Tools are disabled"),
        ({}, {"provider": "NovelAI"}, "NovelAI"),
    ],
)
def test_refusals_at_execution(
    stm: ShortTermMemory, world: World, state: dict[str, Any], ctx: dict[str, Any], why: str
) -> None:
    result = call(stm, world, {"summary": "x"}, state, **ctx)
    assert result["status"] == "short_term_memory_update_refused"
    assert why in result["reason"] and "Do not call this tool again" in result["reason"]
    assert stm.get(server_key(world)) is None


def test_availability_rules(world: World) -> None:
    context = world.context()
    assert stm_tool_refusal(context, ltm_intent=False, already_updated=False) is None
    assert stm_tool_refusal(context, ltm_intent=True, already_updated=False)
    assert stm_tool_refusal(context, ltm_intent=False, already_updated=True)
    assert stm_tool_refusal(
        replace(context, has_tools=False), ltm_intent=False, already_updated=False
    )
    assert stm_tool_refusal(
        replace(context, provider="novelai"), ltm_intent=False, already_updated=False
    )
    assert stm_tool_refusal(
        replace(context, provider="custom"),
        ltm_intent=False,
        already_updated=False,
        no_stm_providers=frozenset({"custom"}),
    )


def test_dm_summary_goes_to_the_user_entry_only(stm: ShortTermMemory, world: World) -> None:
    result = call(stm, world, {"summary": "dm talk"}, server_id=None, channel_id="dm-3")
    assert result["status"] == "short_term_memory_updated_successfully"
    assert stm.get(user_key(world, channel="dm-3")) is not None


def test_one_successful_write_per_turn_even_for_parallel_calls(
    stm: ShortTermMemory, world: World
) -> None:
    from langchain_core.messages import AIMessage
    from langgraph.graph import START, StateGraph
    from langgraph.prebuilt import ToolNode

    from kioku import TurnContext
    from kioku._state import TurnState

    builder = StateGraph(TurnState, context_schema=TurnContext)
    builder.add_node("tools", ToolNode([update_short_term_memory_tool(stm)]))
    builder.add_edge(START, "tools")
    graph = builder.compile()
    calls = [
        {"name": "update_short_term_memory", "args": {"summary": f"version {i}"}, "id": f"c{i}"}
        for i in range(3)
    ]
    context = world.context()
    state = graph.invoke({"messages": [AIMessage(content="", tool_calls=calls)]}, context=context)
    statuses = [json.loads(m.content)["status"] for m in state["messages"][1:]]
    assert statuses.count("short_term_memory_updated_successfully") == 1
    assert statuses.count("short_term_memory_update_refused") == 2
    # A new turn (a new context) may write again.
    again = call(stm, world, {"summary": "next turn"})
    assert again["status"] == "short_term_memory_updated_successfully"
