"""``KiokuMemoryMiddleware`` in ``create_agent`` behaves like ``build_graph``.

One scripted conversation runs through both, each on an emptied database; the model must
be shown the same prompts and offered the same tools, the tools must answer alike, and
the same memories and short-term summary must be left behind.
"""

from __future__ import annotations

import asyncio
import importlib
import json
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from sqlalchemy import Engine, text

from kioku import (
    ConfigurationError,
    KiokuMemoryMiddleware,
    KiokuSettings,
    KiokuStore,
    TurnContext,
    build_graph,
    memory_tools,
)
from kioku._context import server_key, user_space
from kioku._stm.store import entry_keys
from kioku.graphs._steps import since_latest_human
from kioku.testing import Script, ScriptedChatModel, call_tool, say
from tests.helpers import TABLES, World, make_world

SYSTEM = "You are Kioku, a helpful assistant."


def conversation() -> list[tuple[str, list[AIMessage]]]:
    """(user message, the model's replies) per turn."""
    return [
        (
            "Please remember I like jasmine tea",
            [
                call_tool(
                    "create_long_term_memory",
                    memory_content="{user} likes jasmine tea",
                    memory_scope="target_user",
                    target_user="Alice",
                ),
                say("I'll remember that you like jasmine tea."),
            ],
        ),
        (
            "Let's plan the garden party for Saturday.",
            [
                call_tool("update_short_term_memory", summary="Planning a garden party."),
                call_tool("update_short_term_memory", summary="A second summary."),
                say("Saturday it is."),
            ],
        ),
        (
            "Actually, I prefer green tea now; fix that memory.",
            [
                call_tool("update_long_term_memory", memory_id=1, memory_content="x")
                for _ in range(4)
            ],
        ),
        ("What do you remember about me?", [say("You like green tea.")]),
    ]


Transcript = dict[str, Any]


def remember_tea(target_user: str = "u1") -> AIMessage:
    """The model's call saving that the user likes tea."""
    return call_tool(
        "create_long_term_memory",
        memory_content="{user} likes tea",
        memory_scope="target_user",
        target_user=target_user,
    )


def _shown(prompt: list[BaseMessage]) -> list[tuple[str, str]]:
    return [(m.type, m.text) for m in prompt]


def _tool_answers(messages: list[BaseMessage]) -> list[tuple[str, str]]:
    return [
        (m.name or "", json.loads(str(m.content))["status"])
        for m in messages
        if isinstance(m, ToolMessage)
    ]


def _run(store: KiokuStore, world: World, runner: str, mode: str) -> Transcript:
    script = Script()
    model = ScriptedChatModel(script=script)
    checkpointer = store.checkpointer()  # its async methods work too
    if runner == "graph":
        app: Any = build_graph(
            model,
            store,
            checkpointer=checkpointer,
            stm=store.short_term_memory(),
            system_prompt=SYSTEM,
        )
    else:
        app = create_agent(
            model,
            tools=memory_tools(store),
            system_prompt=SYSTEM,
            middleware=[KiokuMemoryMiddleware(store)],
            context_schema=TurnContext,
            checkpointer=checkpointer,
        )
    config = {"configurable": {"thread_id": "conv-1"}}
    states = []
    for text_, replies in conversation():
        script.add(*replies)
        payload = {"messages": [HumanMessage(text_, name="Alice")]}
        if mode == "sync":
            state = app.invoke(payload, config, context=world.context())
        else:
            state = asyncio.run(app.ainvoke(payload, config, context=world.context()))
        states.append(state)
    with store.transaction() as session:
        memories = session.execute(
            text("SELECT scope, user_id, content FROM memories ORDER BY id")
        ).all()
    entries = [store.short_term_memory().load(key) for key in entry_keys(world.context())]
    return {
        "prompts": [_shown(p) for p in script.prompts],
        "offered": list(script.offered),
        "answers": [_tool_answers(since_latest_human(s["messages"])) for s in states],
        "replies": [s["messages"][-1].text for s in states],
        "thread": [(m.type, m.text) for m in states[-1]["messages"]],
        "memories": [tuple(row) for row in memories],
        "stm": [
            (e.summary, [(m.role, m.text) for m in e.messages]) if e else None for e in entries
        ],
    }


def _emptied(engine: Engine) -> None:
    with engine.begin() as connection:
        connection.execute(text(f"TRUNCATE {TABLES} RESTART IDENTITY CASCADE"))


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_middleware_agent_behaves_like_the_graph(
    engine: Engine, settings: KiokuSettings, mode: str
) -> None:
    transcripts = {}
    for runner in ("graph", "agent"):
        _emptied(engine)
        store = KiokuStore(engine, settings=settings)
        try:
            transcripts[runner] = _run(store, make_world(store), runner, mode)
        finally:
            store.close()
    graph, agent = transcripts["graph"], transcripts["agent"]
    for key in graph:
        assert agent[key] == graph[key], key
    # And the conversation did what it says.
    assert graph["memories"] == [("personal", "u-alice", "{user} likes jasmine tea")]
    assert [status for _, status in graph["answers"][1]] == [
        "short_term_memory_updated_successfully",
        "short_term_memory_update_refused",
    ]
    assert graph["answers"][2][-1] == ("update_long_term_memory", "tool_round_limit_reached")
    assert any("jasmine tea" in text_ for _, text_ in graph["prompts"][-1])
    assert "update_short_term_memory" not in graph["offered"][0]  # explicit intent
    assert graph["stm"][0] is not None and graph["stm"][0][0] == "Planning a garden party."


def test_the_agent_keeps_its_own_tools_and_filters_kioku_s(store: KiokuStore) -> None:
    world = make_world(store)

    def weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    script = Script([say("hello")])
    agent = create_agent(
        ScriptedChatModel(script=script),
        tools=[weather, *memory_tools(store)],
        middleware=[KiokuMemoryMiddleware(store)],
        context_schema=TurnContext,
    )
    agent.invoke(
        {"messages": [HumanMessage("remember that I like tea", name="Alice")]},
        context=world.context(has_tools=True),
    )
    offered = script.offered[0]
    assert "weather" in offered and "create_long_term_memory" in offered
    assert "update_short_term_memory" not in offered  # explicit long-term intent
    script.add(say("hi"))
    agent.invoke(
        {"messages": [HumanMessage("hello", name="Alice")]},
        context=world.context(has_tools=False),
    )
    assert script.offered[-1] == ("weather",)


def test_an_agent_without_a_turn_context_is_told_how_to_fix_it(store: KiokuStore) -> None:
    agent = create_agent(
        ScriptedChatModel(script=Script([say("hi")])),
        tools=memory_tools(store),
        middleware=[KiokuMemoryMiddleware(store)],
    )
    with pytest.raises(ConfigurationError, match="context_schema=TurnContext"):
        agent.invoke({"messages": [HumanMessage("hi")]})


def test_an_agent_without_the_memory_tools_is_told_how_to_fix_it(
    store: KiokuStore, caplog: pytest.LogCaptureFixture
) -> None:
    """Without kioku's tools the model can never save a memory: the middleware says so
    once, with the fix, and the agent still answers."""
    agent = create_agent(
        ScriptedChatModel(script=Script([say("hi"), say("again")])),
        middleware=[KiokuMemoryMiddleware(store)],
        context_schema=TurnContext,
    )
    context = TurnContext.for_user("alice", thread_id="no-tools")
    for said in ("hi", "hello again"):
        state = agent.invoke({"messages": [HumanMessage(said)]}, context=context)
        assert state["messages"][-1].text in ("hi", "again")
    warnings = [r.getMessage() for r in caplog.records if "memory_tools(store)" in r.getMessage()]
    assert len(warnings) == 1, warnings


def test_user_spaces_are_named_alike_in_python_and_sql() -> None:
    migration = importlib.import_module("kioku._db.migrations.versions.0010_default_server")
    assert server_key(user_space("u1")) == migration.USER_SPACE_PREFIX + "u1"


def test_a_one_user_app_needs_a_user_id_and_a_thread_id(store: KiokuStore) -> None:
    script = Script([remember_tea(), say("Noted."), say("You like tea.")])
    agent = create_agent(
        ScriptedChatModel(script=script),
        tools=memory_tools(store),
        middleware=[KiokuMemoryMiddleware(store)],
        context_schema=TurnContext,
        checkpointer=store.checkpointer(),
    )
    first: Callable[[str, str], dict[str, Any]] = lambda thread, said: agent.invoke(  # noqa: E731
        {"messages": [HumanMessage(said)]},
        {"configurable": {"thread_id": thread}},
        context=TurnContext.for_user("u1", thread_id=thread),
    )
    state = first("t1", "remember that I like tea")
    assert _tool_answers(state["messages"]) == [
        ("create_long_term_memory", "memory_saved_successfully")
    ]
    first("t2", "what do I like?")  # another conversation of the same user
    assert any("u1 likes tea" in m.text for m in script.prompts[-1])


def test_the_agents_own_tools_do_not_use_up_memory_tool_rounds(store: KiokuStore) -> None:
    world = make_world(store)

    def weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    memory_call = {
        "name": "update_long_term_memory",
        "args": {"memory_id": 999, "memory_content": "x"},
    }
    rounds = [call_tool("weather", city=f"c{n}") for n in range(4)]
    rounds += [call_tool("update_long_term_memory", memory_id=999, memory_content="x")] * 2
    mixed = AIMessage(
        content="",
        tool_calls=[
            {"name": "weather", "args": {"city": "Kyoto"}, "id": "w1"},
            {**memory_call, "id": "m1"},  # type: ignore[typeddict-item]
        ],
    )
    script = Script([*rounds, mixed, say("Sunny everywhere.")])
    agent = create_agent(
        ScriptedChatModel(script=script),
        tools=[weather, *memory_tools(store)],
        middleware=[KiokuMemoryMiddleware(store, max_tool_rounds=2)],
        context_schema=TurnContext,
    )
    state = agent.invoke(
        {"messages": [HumanMessage("weather?", name="Alice")]}, context=world.context()
    )
    answers = [(m.name, m.text) for m in state["messages"] if isinstance(m, ToolMessage)]
    assert [text for name, text in answers if name == "weather"] == [
        "sunny in c0",
        "sunny in c1",
        "sunny in c2",
        "sunny in c3",
        "sunny in Kyoto",  # own tools keep running past kioku's limit
    ]
    memory = [json.loads(text)["status"] for name, text in answers if name != "weather"]
    assert memory[-1] == "tool_round_limit_reached"
    assert "tool_round_limit_reached" not in memory[:2]
    assert state["messages"][-1].text == "Sunny everywhere."
    assert "update_long_term_memory" not in script.offered[-1]


def test_a_run_resumed_after_an_interrupt_still_sees_its_memories(store: KiokuStore) -> None:
    from langchain.agents.middleware import HumanInTheLoopMiddleware
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    world = make_world(store)

    def weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    saved = call_tool(
        "create_long_term_memory",
        memory_content="{user} likes jasmine tea",
        memory_scope="target_user",
        target_user="Alice",
    )
    script = Script([saved, say("ok"), call_tool("weather", city="Kyoto"), say("Sunny.")])
    agent = create_agent(
        ScriptedChatModel(script=script),
        tools=[weather, *memory_tools(store)],
        middleware=[
            HumanInTheLoopMiddleware(interrupt_on={"weather": True}),
            KiokuMemoryMiddleware(store),
        ],
        context_schema=TurnContext,
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "hitl"}}
    said = [HumanMessage("remember I like jasmine tea", name="Alice")]
    agent.invoke({"messages": said}, config, context=world.context())
    asked = [HumanMessage("weather in Kyoto?", name="Alice")]
    agent.invoke({"messages": asked}, config, context=world.context())  # interrupted
    state = agent.invoke(
        Command(resume={"decisions": [{"type": "approve"}]}), config, context=world.context()
    )
    assert state["messages"][-1].text == "Sunny."
    assert any("jasmine tea" in m.text for m in script.prompts[-1])  # after the resume


def _quickstart_agent(store: KiokuStore, script: Script, **kwargs: Any) -> Any:
    return create_agent(
        ScriptedChatModel(script=script),
        tools=memory_tools(store),
        middleware=[KiokuMemoryMiddleware(store, **kwargs)],
        context_schema=TurnContext,
        checkpointer=store.checkpointer(),
    )


def _crash_mid_turn(agent: Any, config: dict[str, Any], *, call_id: str) -> None:
    """Leave ``config``'s thread as a turn that died between a tool call and its result."""
    dangling = AIMessage(
        content="",
        tool_calls=[{"name": "search_long_term_memory", "args": {"query": "tea"}, "id": call_id}],
    )
    agent.update_state(config, {"messages": [HumanMessage("find tea"), dangling]})


def _checkpoints(store: KiokuStore) -> int:
    with store.transaction() as session:
        return int(session.execute(text("SELECT count(*) FROM checkpoints")).scalar_one())


def test_the_middleware_adds_one_graph_step(store: KiokuStore) -> None:
    """The turn's opening runs inside the agent's model step; only the capture is a step of
    its own (after every other hook), so a turn writes one checkpoint more than a bare
    agent's."""
    agent = _quickstart_agent(store, Script())
    assert set(agent.get_graph().nodes) == {
        "__start__",
        "model",
        "tools",
        "KiokuMemoryMiddleware.after_agent",
        "__end__",
    }

    def noop(text_: str) -> str:
        """Do nothing."""
        return "ok"

    bare = create_agent(
        ScriptedChatModel(script=Script([call_tool("noop", text_="x"), say("done")])),
        tools=[noop],
        checkpointer=store.checkpointer(),
    )
    before = _checkpoints(store)
    bare.invoke({"messages": [HumanMessage("hi")]}, {"configurable": {"thread_id": "bare"}})
    bare_count = _checkpoints(store) - before
    script = Script([remember_tea(), say("Noted.")])
    agent = _quickstart_agent(store, script)
    before = _checkpoints(store)
    context = TurnContext.for_user("u1", thread_id="kioku")
    state = agent.invoke(
        {"messages": [HumanMessage("remember that I like tea")]},
        {"configurable": {"thread_id": "kioku"}},
        context=context,
    )
    assert _checkpoints(store) - before == bare_count + 1
    assert state["kioku_context_tokens"]["personal_memories"] >= 0
    entries = [store.short_term_memory().load(key) for key in entry_keys(context)]
    assert all(e is not None and [m.text for m in e.messages][-1] == "Noted." for e in entries)


def _written_channels(store: KiokuStore, thread_id: str) -> Counter[str]:
    with store.transaction() as session:
        rows = session.execute(
            text("SELECT channel FROM checkpoint_writes WHERE thread_id = :t"), {"t": thread_id}
        )
        return Counter(str(channel) for (channel,) in rows)


def test_a_turn_writes_only_the_flags_it_changes(store: KiokuStore) -> None:
    """A flag a turn leaves as it was is not written again (each write is a checkpointer
    row); the state still holds it, and a flag that changes is written."""
    flags = ("kioku_ltm_intent", "kioku_private_recent", "kioku_stm_updated")
    flags += ("kioku_search_offered",)
    script = Script([say("Hello."), say("Hi again."), remember_tea(), say("Noted.")])
    agent = _quickstart_agent(store, script)
    config = {"configurable": {"thread_id": "flags"}}
    context = TurnContext.for_user("u1", thread_id="flags")
    written = Counter[str]()

    def turn(message: str) -> Counter[str]:
        agent.invoke({"messages": [HumanMessage(message)]}, config, context=context)
        now = _written_channels(store, "flags")
        added = now - written
        written.update(added)
        return added

    first = turn("hello")
    assert all(first[flag] for flag in flags), first
    second = turn("hello again")
    assert second["kioku_turn"] == 1
    assert not any(second[flag] for flag in flags)
    state = agent.get_state(config).values
    assert [state[flag] for flag in flags] == [False, False, False, False]
    assert turn("remember that I like tea")["kioku_ltm_intent"] == 1
    assert agent.get_state(config).values["kioku_ltm_intent"] is True


def _written_messages(store: KiokuStore, thread_id: str) -> dict[tuple[str, str, int], int]:
    """Each ``messages`` write of the thread (its key) → how many messages it holds."""
    serde = store.checkpointer().serde
    with store.transaction() as session:
        rows = session.execute(
            text(
                "SELECT checkpoint_id, task_id, idx, type, blob FROM checkpoint_writes "
                "WHERE thread_id = :t AND channel = 'messages'"
            ),
            {"t": thread_id},
        )
        return {
            (str(c), str(t), int(i)): len(serde.loads_typed((kind, bytes(blob))))
            for c, t, i, kind, blob in rows
        }


def test_a_turn_writes_back_only_the_messages_it_stamps(store: KiokuStore) -> None:
    """Opening a turn stamps its new messages; the thread before them is not written again
    (it was, whole, every turn: a write growing with the thread), and the state still holds
    every message, stamped."""
    script = Script([say(f"Reply {n}.") for n in range(4)])
    agent = _quickstart_agent(store, script)
    config = {"configurable": {"thread_id": "stamps"}}
    context = TurnContext.for_user("u1", thread_id="stamps")
    before: dict[tuple[str, str, int], int] = {}
    for n in range(4):
        agent.invoke({"messages": [HumanMessage(f"message {n}")]}, config, context=context)
        now = _written_messages(store, "stamps")
        added = sum(count for key, count in now.items() if key not in before)
        before = now
    # the input, its stamped copy, the reply, and both given their time by the capture
    assert added <= 5
    thread = agent.get_state(config).values["messages"]
    assert [m.text for m in thread[-2:]] == ["message 3", "Reply 3."]
    assert len(thread) == 8
    assert all("kioku_user_id" in m.additional_kwargs for m in thread)


def test_a_turn_answers_calls_an_interrupted_turn_left_open(store: KiokuStore) -> None:
    """A thread whose last turn stopped between a tool call and its result: the next turn
    shows the model the call answered (right after it), and the thread keeps the message
    without the call, which it names under ``kioku_interrupted_calls``."""
    script = Script([say("Hello again.")])
    agent = _quickstart_agent(store, script)
    config = {"configurable": {"thread_id": "crashed"}}
    _crash_mid_turn(agent, config, call_id="c1")
    state = agent.invoke(
        {"messages": [HumanMessage("hello?")]},
        config,
        context=TurnContext.for_user("u1", thread_id="crashed"),
    )
    assert [m.type for m in script.prompts[0]][-3:] == ["ai", "tool", "human"]
    answer = script.prompts[0][-2]
    assert json.loads(str(answer.content))["status"] == "tool_call_interrupted"
    kinds = [type(m).__name__ for m in state["messages"]]
    assert kinds == ["HumanMessage", "AIMessage", "HumanMessage", "AIMessage"]
    interrupted = state["messages"][1]
    assert not interrupted.tool_calls
    assert [c["id"] for c in interrupted.additional_kwargs["kioku_interrupted_calls"]] == ["c1"]
    assert state["messages"][-1].text == "Hello again."


def test_an_outer_guard_s_rewrite_holds_on_a_repairing_turn(store: KiokuStore) -> None:
    """Repairing the thread does not rewrite it whole: an outer ``wrap_model_call`` guard's
    rewrite of the reply is what the thread and short-term memory keep."""
    from langchain.agents.middleware import wrap_model_call

    @wrap_model_call
    def guard(request: Any, handler: Any) -> Any:
        response = handler(request)
        return [m.model_copy(update={"content": "[blocked]"}) for m in response.result][-1]

    agent = create_agent(
        ScriptedChatModel(script=Script([say("the code is SECRET-42")])),
        tools=memory_tools(store),
        middleware=[guard, KiokuMemoryMiddleware(store)],
        context_schema=TurnContext,
        checkpointer=store.checkpointer(),
    )
    config = {"configurable": {"thread_id": "guarded-repair"}}
    _crash_mid_turn(agent, config, call_id="c9")
    context = TurnContext.for_user("u1", thread_id="guarded-repair")
    state = agent.invoke({"messages": [HumanMessage("the code?")]}, config, context=context)
    assert state["messages"][-1].text == "[blocked]"
    entry = store.short_term_memory().load(entry_keys(context)[0])
    assert entry is not None and not any("SECRET" in m.text for m in entry.messages)


def test_memory_calls_past_the_round_limit_end_the_turn(store: KiokuStore) -> None:
    world = make_world(store)
    call = call_tool("update_long_term_memory", memory_id=999, memory_content="x")
    script = Script([call, call, call, say("never reached")])
    agent = _quickstart_agent(store, script, max_tool_rounds=2)
    state = agent.invoke(
        {"messages": [HumanMessage("fix it", name="Alice")]},
        {"configurable": {"thread_id": "limit"}},
        context=world.context(),
    )
    assert len(script.prompts) == 3
    last = state["messages"][-1]
    assert isinstance(last, ToolMessage)
    assert json.loads(str(last.content))["status"] == "tool_round_limit_reached"


def test_tool_callbacks_are_given_the_arguments_not_the_graph_state(store: KiokuStore) -> None:
    """LangChain prints a tool's input for its callbacks; the injected runtime (the whole
    state: every message and memory block) is left out, as for the tools it recognises."""
    from langchain_core.callbacks import BaseCallbackHandler

    printed: list[str] = []

    class Printed(BaseCallbackHandler):
        def on_tool_start(self, serialized: Any, input_str: str, **kwargs: Any) -> None:
            printed.append(input_str)

    agent = _quickstart_agent(store, Script([remember_tea(), say("Noted.")]))
    agent.invoke(
        {"messages": [HumanMessage("remember that I like tea, says a long message")]},
        {"configurable": {"thread_id": "printed"}, "callbacks": [Printed()]},
        context=TurnContext.for_user("u1", thread_id="printed"),
    )
    assert len(printed) == 1
    assert "likes tea" in printed[0] and "runtime" not in printed[0]
    assert "says a long message" not in printed[0]


def test_the_model_sees_what_the_agent_hands_it(store: KiokuStore) -> None:
    """An outer middleware's edits to the messages reach the model (kioku adds its blocks
    to them, it does not rebuild the dialogue from the state)."""
    from langchain.agents.middleware import wrap_model_call

    @wrap_model_call
    def redact(request: Any, handler: Any) -> Any:
        edited = [
            m.model_copy(update={"content": "[REDACTED]"}) if "password" in m.text else m
            for m in request.messages
        ]
        return handler(request.override(messages=edited))

    script = Script([say("ok")])
    agent = create_agent(
        ScriptedChatModel(script=script),
        tools=memory_tools(store),
        middleware=[redact, KiokuMemoryMiddleware(store)],
        context_schema=TurnContext,
    )
    agent.invoke(
        {"messages": [HumanMessage("my password is hunter2")]},
        context=TurnContext.for_user("u1", thread_id="redacted"),
    )
    shown = [m.text for m in script.prompts[0]]
    assert "[REDACTED]" in shown and not any("hunter2" in t for t in shown)


def test_an_output_guard_s_rewrite_is_what_short_term_memory_keeps(store: KiokuStore) -> None:
    """Capture runs after every other middleware's hooks: a reply an ``after_model`` guard
    rewrote is captured as rewritten, never as the model drafted it."""
    from langchain.agents.middleware import after_model

    @after_model
    def guard(state: Any, runtime: Any) -> dict[str, Any] | None:
        last = state["messages"][-1]
        if "SECRET" not in last.text:
            return None
        return {"messages": [last.model_copy(update={"content": "[blocked]"})]}

    agent = create_agent(
        ScriptedChatModel(script=Script([say("the code is SECRET-42")])),
        tools=memory_tools(store),
        middleware=[guard, KiokuMemoryMiddleware(store)],
        context_schema=TurnContext,
        checkpointer=store.checkpointer(),
    )
    context = TurnContext.for_user("u1", thread_id="guarded")
    agent.invoke(
        {"messages": [HumanMessage("what is the code?")]},
        {"configurable": {"thread_id": "guarded"}},
        context=context,
    )
    entry = store.short_term_memory().load(entry_keys(context)[0])
    assert entry is not None
    texts = [m.text for m in entry.messages]
    assert "[blocked]" in texts and not any("SECRET" in t for t in texts)


def test_a_repaired_turn_trimmed_at_once_keeps_no_result_without_its_call(
    store: KiokuStore,
) -> None:
    """An interrupted call answered by the next turn, which trims the thread in the same
    turn: the answer goes with its call."""
    agent = _quickstart_agent(store, Script([say("Hello again.")]), max_thread_messages=2)
    config = {"configurable": {"thread_id": "crashed-and-trimmed"}}
    _crash_mid_turn(agent, config, call_id="c1")
    state = agent.invoke(
        {"messages": [HumanMessage("hello?")]},
        config,
        context=TurnContext.for_user("u1", thread_id="crashed-and-trimmed"),
    )
    assert [m.type for m in state["messages"]] == ["human", "ai"]
