"""The per-turn graph end to end, with a scripted tool-calling model and real Postgres."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from syrupy.assertion import SnapshotAssertion

from kioku import KiokuStore
from kioku.graphs import build_graph
from kioku.testing import Script, ScriptedChatModel, call_tool, say
from tests.helpers import World, make_world


@pytest.fixture
def world(store: KiokuStore) -> World:
    return make_world(store)


def config(thread: str = "conv-1") -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def statuses(messages: list[Any]) -> list[str]:
    return [json.loads(m.content)["status"] for m in messages if isinstance(m, ToolMessage)]


def test_mermaid_drawing(store: KiokuStore, snapshot: SnapshotAssertion) -> None:
    graph = build_graph(ScriptedChatModel(script=Script()), store, checkpointer=InMemorySaver())
    assert graph.get_graph().draw_mermaid() == snapshot


def test_remember_request_saves_a_memory_and_streams_the_notice(
    store: KiokuStore, world: World
) -> None:
    script = Script(
        [
            call_tool(
                "create_long_term_memory",
                memory_content="{user} likes jasmine tea",
                memory_scope="target_user",
                target_user="Alice",
            ),
            say("I'll remember that you like jasmine tea."),
        ]
    )
    graph = build_graph(ScriptedChatModel(script=script), store, checkpointer=store.checkpointer())
    chunks = list(
        graph.stream(
            {"messages": [HumanMessage("Please remember I like jasmine tea", name="Alice")]},
            config(),
            context=world.context(),
            stream_mode=["custom", "values"],
        )
    )
    custom = [c for mode, c in chunks if mode == "custom"]
    final = [c for mode, c in chunks if mode == "values"][-1]
    assert custom[0]["type"] == "kioku.memory_notice"
    assert statuses(final["messages"]) == ["memory_saved_successfully"]
    assert final["messages"][-1].content.startswith("I'll remember")
    # Intent: the STM tool was not offered this turn.
    assert script.offered[0] == (
        "create_long_term_memory",
        "update_long_term_memory",
        "create_memory",
    )
    assert final["kioku_ltm_intent"] is True
    assert final["kioku_context_tokens"]["total"] > 0


def test_three_stm_calls_one_success(store: KiokuStore, world: World) -> None:
    script = Script(
        [
            call_tool("update_short_term_memory", summary="first"),
            call_tool("update_short_term_memory", summary="second"),
            call_tool("update_short_term_memory", summary="third"),
            say("done"),
        ]
    )
    graph = build_graph(ScriptedChatModel(script=script), store, checkpointer=InMemorySaver())
    state = graph.invoke(
        {"messages": [HumanMessage("let's talk about tea")]}, config(), context=world.context()
    )
    assert statuses(state["messages"]) == [
        "short_term_memory_updated_successfully",
        "short_term_memory_update_refused",
        "short_term_memory_update_refused",
    ]
    assert "update_short_term_memory" in script.offered[0]
    assert "update_short_term_memory" not in script.offered[1]  # the dedup flag hid it
    assert state["kioku_stm_updated"] is True


def test_one_context_for_every_turn_still_allows_a_summary_each_turn(
    store: KiokuStore, world: World
) -> None:
    """Applications may pass the same context object to every turn (one ``turn_id``):
    each turn may still write its one summary."""
    script = Script([])
    graph = build_graph(ScriptedChatModel(script=script), store, checkpointer=InMemorySaver())
    context = world.context()
    for turn in range(3):
        script.add(
            call_tool("update_short_term_memory", summary=f"summary of turn {turn}"),
            call_tool("update_short_term_memory", summary="a second one"),
            say("ok"),
        )
        state = graph.invoke(
            {"messages": [HumanMessage(f"message {turn}")]}, config(), context=context
        )
        assert statuses(state["messages"])[-2:] == [
            "short_term_memory_updated_successfully",
            "short_term_memory_update_refused",
        ], turn


def test_tool_rounds_are_bounded_and_every_call_answered(store: KiokuStore, world: World) -> None:
    loop = [
        call_tool("update_long_term_memory", memory_id=999, memory_content="x") for _ in range(6)
    ]
    script = Script(loop)
    graph = build_graph(
        ScriptedChatModel(script=script), store, checkpointer=InMemorySaver(), max_tool_rounds=2
    )
    state = graph.invoke(
        {"messages": [HumanMessage("fix memory 999")]}, config(), context=world.context()
    )
    calls = [c["id"] for m in state["messages"] if isinstance(m, AIMessage) for c in m.tool_calls]
    answered = [m.tool_call_id for m in state["messages"] if isinstance(m, ToolMessage)]
    assert calls == answered
    assert statuses(state["messages"])[-1] == "tool_round_limit_reached"
    assert script.offered[-1] == ()  # no tools bound once the limit is reached


def test_tool_errors_come_back_as_tool_results(store: KiokuStore, world: World) -> None:
    script = Script([call_tool("no_such_tool", x=1), say("sorry")])
    graph = build_graph(ScriptedChatModel(script=script), store, checkpointer=InMemorySaver())
    state = graph.invoke({"messages": [HumanMessage("hi")]}, config(), context=world.context())
    [tool_message] = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert "no_such_tool" in str(tool_message.content)
    assert state["messages"][-1].content == "sorry"


def test_flags_reset_each_turn_and_capture_keeps_send_times(
    store: KiokuStore, world: World
) -> None:
    script = Script(
        [call_tool("update_short_term_memory", summary="tea talk"), say("ok"), say("hello again")]
    )
    graph = build_graph(ScriptedChatModel(script=script), store, checkpointer=store.checkpointer())
    context = world.context()
    graph.invoke({"messages": [HumanMessage("tea?")]}, config(), context=context)
    state = graph.invoke({"messages": [HumanMessage("hi")]}, config(), context=world.context())
    assert state["kioku_stm_updated"] is False
    stamps = [
        m.additional_kwargs.get("kioku_sent_at")
        for m in state["messages"]
        if not isinstance(m, ToolMessage) and (not isinstance(m, AIMessage) or not m.tool_calls)
    ]
    assert all(stamps)
    prompt = script.prompts[-1]
    assert any("tea talk" in str(m.content) for m in prompt)  # the summary is in the context


def test_restart_keeps_short_and_long_term_memory(store: KiokuStore, world: World) -> None:
    first = Script(
        [
            call_tool(
                "create_long_term_memory",
                memory_content="{user} drinks oolong",
                memory_scope="target_user",
                target_user="Alice",
            ),
            call_tool("update_short_term_memory", summary="Alice talked about oolong"),
            say("noted"),
        ]
    )
    graph = build_graph(ScriptedChatModel(script=first), store, checkpointer=store.checkpointer())
    graph.invoke(
        {"messages": [HumanMessage("I drink oolong daily")]}, config(), context=world.context()
    )

    restarted = KiokuStore(store.engine, settings=store.settings)  # a new process's objects
    second = Script([say("welcome back")])
    graph2 = build_graph(
        ScriptedChatModel(script=second), restarted, checkpointer=restarted.checkpointer()
    )
    state = graph2.invoke({"messages": [HumanMessage("hello")]}, config(), context=world.context())
    prompt_text = "\n".join(str(m.content) for m in second.prompts[0])
    assert "Alice drinks oolong" in prompt_text
    assert "Alice talked about oolong" in prompt_text
    assert [m.content for m in state["messages"] if isinstance(m, HumanMessage)] == [
        "I drink oolong daily",
        "hello",
    ]
    restarted.close()


def test_the_graph_runs_async(store: KiokuStore, world: World) -> None:
    import asyncio

    script = Script(
        [
            call_tool(
                "create_long_term_memory",
                memory_content="{user} likes genmaicha",
                memory_scope="target_user",
                target_user="Alice",
            ),
            call_tool("update_short_term_memory", summary="genmaicha talk"),
            say("Noted."),
        ]
    )
    graph = build_graph(ScriptedChatModel(script=script), store, checkpointer=InMemorySaver())

    async def run() -> dict[str, Any]:
        return await graph.ainvoke(
            {"messages": [HumanMessage("I like genmaicha")]}, config(), context=world.context()
        )

    state = asyncio.run(run())
    assert statuses(state["messages"]) == [
        "memory_saved_successfully",
        "short_term_memory_updated_successfully",
    ]
    asyncio.run(store.aclose())


def _shop_history(store: KiokuStore, world: World) -> None:
    """30 long server memories: more than a budget of 80 tokens shows."""
    from kioku._db.models import Memory

    with store.transaction() as session:
        for i in range(30):
            session.add(
                Memory(
                    scope="server",
                    server_id="srv-a",
                    persona_lineage_id=world.persona.lineage_id,
                    content=f"long fact {i} about the shop's history and its many teas",
                )
            )


def test_search_is_offered_when_memories_overflow(store: KiokuStore, world: World) -> None:
    from kioku._context_build.render import ContextBudgets

    _shop_history(store, world)
    script = Script([call_tool("search_long_term_memory", query="shop history"), say("found it")])
    graph = build_graph(
        ScriptedChatModel(script=script),
        store,
        checkpointer=InMemorySaver(),
        budgets=ContextBudgets(server_memories=80),
    )
    state = graph.invoke(
        {"messages": [HumanMessage("tell me about the shop's history")]},
        config(),
        context=world.context(),
    )
    assert "search_long_term_memory" in script.offered[0]
    [tool_message] = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert json.loads(tool_message.content)["status"] == "memories_found"
    assert tool_message.artifact and tool_message.artifact[0]["scope"] == "server"
    # Below budget the search tool is not offered.
    quiet = Script([say("hi")])
    small = build_graph(ScriptedChatModel(script=quiet), store, checkpointer=InMemorySaver())
    small.invoke({"messages": [HumanMessage("hi")]}, config("other"), context=world.context())
    assert "search_long_term_memory" not in quiet.offered[0]


def test_search_is_offered_when_memories_overflow_and_there_is_no_query(
    store: KiokuStore, world: World
) -> None:
    """Issue #39: a turn without text to rank by (an empty or image-only message) still
    names the search tool in the block and offers it."""
    from kioku._context_build.render import ContextBudgets

    _shop_history(store, world)
    script = Script([say("hello")])
    graph = build_graph(
        ScriptedChatModel(script=script),
        store,
        checkpointer=InMemorySaver(),
        budgets=ContextBudgets(server_memories=80),
    )
    state = graph.invoke({"messages": [HumanMessage("")]}, config(), context=world.context())
    assert "search_long_term_memory" in script.offered[0]
    assert state["kioku_search_offered"] is True
    [block] = [
        m.content
        for m in state["kioku_memory_context"]
        if m.additional_kwargs.get("kioku_tag") == "server_memories"
    ]
    assert "older memories not shown; search_long_term_memory can find them)" in block
