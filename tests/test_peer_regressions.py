"""Regression tests for bugs known in other memory stores, so kioku never grows them.

- numeric filters compared as numbers, not as text;
- conversation capture never splits a tool call from its result;
- update and delete always check ownership, on every path;
- ``created_at`` survives updates;
- decay is computed when reading, never written back;
- the memory limits hold on every write path (LangChain tools, MCP, Python API).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from sqlalchemy import select

from kioku import (
    KiokuSettings,
    KiokuStore,
    create_long_term_memory_tool,
)
from kioku._db.models import Memory
from kioku._mcp_server import KiokuMcp, McpScope
from kioku._memory.create import create_long_term_memory
from kioku._search.engine import rank_candidates
from kioku._stm.store import ShortTermMemory
from kioku._tools.ltm import create_memory_tool
from kioku._tools.search import search_long_term_memory, visibility_for
from kioku.graphs import build_graph
from kioku.testing import Script, ScriptedChatModel, call_tool, say
from tests.helpers import World, make_world, memory_row, run_tool, server_key, table_counts


@pytest.fixture
def world(store: KiokuStore) -> World:
    return make_world(store)


def typed(world: World, importance: float, content: str, **metadata: Any) -> int:
    outcome = run_tool(
        create_memory_tool(world.store),
        {"type": "semantic", "content": content, "importance": importance, "metadata": metadata},
        world.context(),
    )
    assert outcome.result["status"] == "memory_saved_successfully", outcome.result
    return int(outcome.result["memory_id"])


def test_importance_filter_compares_numbers(world: World) -> None:
    # As text, "5e-05" >= "0.0001" and "1" < "0.5"; as numbers neither holds.
    ids = {
        importance: typed(world, importance, f"tea fact number {i}")
        for i, importance in enumerate([5e-05, 0.001, 0.5, 0.9, 1])
    }
    payload, records = search_long_term_memory(
        world.store, world.context(), {"query": "tea fact", "min_importance": 0.0001, "limit": 20}
    )
    assert payload["status"] == "memories_found"
    assert {r["id"] for r in records} == {ids[0.001], ids[0.5], ids[0.9], ids[1]}
    _, records = search_long_term_memory(
        world.store, world.context(), {"query": "tea fact", "min_importance": 0.5, "limit": 20}
    )
    assert {r["id"] for r in records} == {ids[0.5], ids[0.9], ids[1]}


@pytest.mark.parametrize("bad", [True, "0.5", -0.1, 1.5, [0.5]])
def test_importance_filter_rejects_non_numbers(world: World, bad: object) -> None:
    payload, _ = search_long_term_memory(
        world.store, world.context(), {"query": "tea", "min_importance": bad}
    )
    assert payload["status"] == "search_failed_invalid_args"
    assert "min_importance" in payload["reason"]


def test_capture_never_splits_a_tool_call_from_its_result(store: KiokuStore, world: World) -> None:
    """Short-term memory keeps the dialogue only: no call without its result, no result alone."""
    script = Script(
        [
            call_tool(
                "create_long_term_memory",
                memory_content="{user} likes tea",
                memory_scope="target_user",
                target_user="Alice",
            ),
            say("Noted: you like tea."),
        ]
    )
    stm = ShortTermMemory(store, InMemorySaver())
    graph = build_graph(
        ScriptedChatModel(script=script), store, checkpointer=InMemorySaver(), stm=stm
    )
    for turn in range(4):  # enough turns to push the window past the tool call
        script.add(say(f"Reply {turn}."))
        graph.invoke(
            {"messages": [HumanMessage(f"Remember that I like tea ({turn})", name="Alice")]},
            {"configurable": {"thread_id": "t"}},
            context=world.context(),
        )
    entry = stm.get(server_key(world))
    assert entry is not None and entry.messages
    assert all(m.role in ("user", "assistant") and m.text for m in entry.messages)
    assert not any("create_long_term_memory" in m.text for m in entry.messages)


def test_update_and_delete_check_ownership_through_mcp(store: KiokuStore, world: World) -> None:
    """An MCP client of another server cannot reach this server's memories by id."""
    created = run_tool(
        create_long_term_memory_tool(store),
        {"memory_content": "The shop opens at nine", "memory_scope": "server_wide"},
        world.context(),
    )
    memory_id = created.result["memory_id"]
    intruder = KiokuMcp(store, McpScope(server_id="elsewhere", user_id="u-mallory"))
    for content in ("The shop never opens", ""):
        result = intruder.call(
            "update_long_term_memory", {"memory_id": memory_id, "memory_content": content}
        )
        assert result["status"] == "memory_update_failed_not_found"
    got = intruder.call("get_memory", {"memory_id": memory_id})
    assert got["status"] != "memory_found"
    row = memory_row(store, memory_id)
    assert row is not None and row.content == "The shop opens at nine"


def test_created_at_survives_updates_on_every_path(store: KiokuStore, world: World) -> None:
    mcp = KiokuMcp(store, McpScope(server_id="srv-a", user_id="u-alice", user_name="Alice"))
    created = mcp.call(
        "create_long_term_memory",
        {"memory_content": "The shop opens at nine", "memory_scope": "server_wide"},
    )
    memory_id = created["memory_id"]
    before = memory_row(store, memory_id)
    assert before is not None
    updated = mcp.call(
        "update_long_term_memory", {"memory_id": memory_id, "memory_content": "Opens at ten"}
    )
    assert updated["status"] == "memory_updated_successfully"
    after = memory_row(store, memory_id)
    assert after is not None and after.content == "Opens at ten"
    assert after.created_at == before.created_at
    assert after.updated_at >= before.updated_at


def test_decay_is_computed_when_reading_and_never_stored(world: World) -> None:
    memory_id = typed(world, 0.8, "jasmine tea on Fridays", decay_rate=0.01)
    before = memory_row(world.store, memory_id)
    assert before is not None
    relevance = []
    for days in (0, 100):
        with world.store.sessions() as session:
            [hit] = rank_candidates(
                session,
                visibility_for(session, world.context()),
                "jasmine tea",
                None,
                now=before.created_at + timedelta(days=days),
            ).hits()
        relevance.append(hit.relevance)
    assert relevance[0] == pytest.approx(0.8)
    assert relevance[1] == pytest.approx(0.8 * 0.36788, rel=1e-3)  # e^-1 after 100 days
    after = memory_row(world.store, memory_id)
    assert after is not None
    assert (after.importance, after.updated_at) == (before.importance, before.updated_at)


def _server_memories(store: KiokuStore) -> int:
    with store.sessions() as session:
        return len(session.scalars(select(Memory.id).where(Memory.scope == "server")).all())


@pytest.mark.parametrize("path", ["tool", "typed_tool", "mcp", "mcp_typed", "python_api"], ids=str)
def test_limits_hold_on_every_write_path(
    store: KiokuStore, settings: KiokuSettings, path: str
) -> None:
    limits = settings.model_copy(update={"max_server_memories": 2})
    store = KiokuStore(store.engine, settings=limits)  # the fixture's store empties the tables
    world = make_world(store)
    mcp = KiokuMcp(store, McpScope(server_id="srv-a", user_id="u-alice", user_name="Alice"))
    context = world.context()

    def write(i: int) -> str:
        content = f"Fact number {i} about the shop"
        server_wide = {"memory_content": content, "memory_scope": "server_wide"}
        typed_args = {"type": "semantic", "content": content}
        if path == "tool":
            result = run_tool(create_long_term_memory_tool(store), server_wide, context).result
        elif path == "typed_tool":
            result = run_tool(create_memory_tool(store), typed_args, context).result
        elif path == "mcp":
            result = mcp.call("create_long_term_memory", server_wide)
        elif path == "mcp_typed":
            result = mcp.call("create_memory", typed_args)
        else:
            with store.sessions() as session:
                result = create_long_term_memory(session, store, context, server_wide).to_dict()
        return str(result["status"])

    statuses = [write(i) for i in range(3)]
    assert statuses == ["memory_saved_successfully"] * 2 + ["memory_save_failed_limit_exceeded"]
    assert _server_memories(store) == 2
    assert table_counts(store)[1] == 2  # no history row for the refused write
    store.close()
