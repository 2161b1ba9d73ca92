"""The per-turn graph keeps its conversation thread bounded (issue #13)."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from kioku import KiokuStore, load_settings
from kioku._context_build.tokens import TiktokenCounter
from kioku._stm.model import StmKey
from kioku._stm.store import ShortTermMemory
from kioku.graphs import build_graph
from kioku.graphs._trim import trim_removals, trim_start
from kioku.testing import Script, ScriptedChatModel, call_tool, echo, say
from tests.helpers import World, make_world
from tests.test_erasure import everything_text

KEEP = 6


@pytest.fixture
def world(store: KiokuStore) -> World:
    return make_world(store)


def config(thread: str = "conv-trim") -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


# pure -------------------------------------------------------------------------------------


def tool_turn(n: int, calls: int = 1) -> list[BaseMessage]:
    """A user message, ``calls`` tool rounds, then a reply."""
    turn: list[BaseMessage] = [HumanMessage(f"q{n}", id=f"h{n}")]
    for c in range(calls):
        call = f"call-{n}-{c}"
        turn.append(
            AIMessage("", id=f"a{n}-{c}", tool_calls=[{"name": "t", "args": {}, "id": call}])
        )
        turn.append(ToolMessage("{}", tool_call_id=call, id=f"t{n}-{c}"))
    turn.append(AIMessage(f"r{n}", id=f"r{n}"))
    return turn


def plain_turn(n: int) -> list[BaseMessage]:
    return [HumanMessage(f"q{n}", id=f"h{n}"), AIMessage(f"r{n}", id=f"r{n}")]


def assert_well_formed(kept: list[BaseMessage]) -> None:
    body = [m for m in kept if not isinstance(m, SystemMessage)]
    assert isinstance(body[0], HumanMessage)
    calls = {c["id"] for m in body if isinstance(m, AIMessage) for c in m.tool_calls}
    assert all(m.tool_call_id in calls for m in body if isinstance(m, ToolMessage))


def test_a_short_thread_is_left_alone() -> None:
    thread = [m for n in range(3) for m in plain_turn(n)]
    assert trim_start(thread, KEEP) == 0
    assert trim_removals(thread, KEEP) == []


@pytest.mark.parametrize("keep", range(1, 30))
def test_cuts_fall_between_turns_and_keep_the_latest_whole(keep: int) -> None:
    thread: list[BaseMessage] = []
    for n in range(8):
        thread += tool_turn(n, calls=n % 3) if n % 2 else plain_turn(n)
    latest = tool_turn(8, calls=4)  # 10 messages on its own
    thread += latest
    start = trim_start(thread, keep)
    kept = thread[start:]
    assert_well_formed(kept)
    assert kept[-len(latest) :] == latest  # never drops the latest turn
    assert len(kept) <= max(keep, len(latest))
    if start > 0:
        # as much as fits: the turn before the cut would not have
        previous = max(i for i in range(start) if isinstance(thread[i], HumanMessage))
        assert len(thread) - previous > keep
    assert [r.id for r in trim_removals(thread, keep)] == [m.id for m in thread[:start]]


def test_leading_system_messages_stay() -> None:
    thread: list[BaseMessage] = [SystemMessage("rules", id="s0")]
    thread += [m for n in range(10) for m in plain_turn(n)]
    removed = {r.id for r in trim_removals(thread, 4)}
    kept = [m for m in thread if m.id not in removed]
    assert [m.id for m in kept] == ["s0", "h8", "r8", "h9", "r9"]


def test_a_result_is_never_separated_from_its_call() -> None:
    # An odd thread: a call answered after a later user message (as a repair could leave).
    thread: list[BaseMessage] = [
        *plain_turn(0),
        HumanMessage("q1", id="h1"),
        AIMessage("", id="a1", tool_calls=[{"name": "t", "args": {}, "id": "x"}]),
        HumanMessage("q2", id="h2"),
        ToolMessage("{}", tool_call_id="x", id="t1"),
        AIMessage("r2", id="r2"),
    ]
    assert thread[trim_start(thread, 3)].id == "h1"


def test_the_setting_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_settings().thread_max_messages == 20
    monkeypatch.setenv("KIOKU_THREAD_MAX_MESSAGES", "8")
    assert load_settings().thread_max_messages == 8


# the graph --------------------------------------------------------------------------------


def thread_of(graph: Any, thread: str = "conv-trim") -> list[BaseMessage]:
    return list(graph.get_state(config(thread)).values.get("messages", []))


def test_thread_stays_bounded_over_many_turns(store: KiokuStore, world: World) -> None:
    script = Script(fallback=echo)
    graph = build_graph(
        ScriptedChatModel(script=script),
        store,
        checkpointer=store.checkpointer(),
        max_thread_messages=KEEP,
    )
    for turn in range(40):
        if turn % 5 == 0:  # now and then a tool round: four messages in the turn
            script.add(call_tool("update_long_term_memory", memory_id=999, memory_content="x"))
        before = thread_of(graph)
        prompts = len(script.prompts)
        graph.invoke(
            {"messages": [HumanMessage(f"message {turn}", name="Alice")]},
            config(),
            context=world.context(),
        )
        # The model saw everything the thread kept, then the new message.
        first_prompt = script.prompts[prompts]
        thread_ids = {m.id for m in before}
        assert [m.id for m in first_prompt if m.id in thread_ids] == [m.id for m in before]
        assert first_prompt[-1].text == f"message {turn}"
        after = thread_of(graph)
        assert_well_formed(after)
        last_turn = max(i for i, m in enumerate(after) if isinstance(m, HumanMessage))
        assert after[last_turn].text == f"message {turn}"  # the latest turn is whole
        assert len(after) <= KEEP or last_turn == 0
        assert after[-1].text == f"(scripted model) You said: message {turn}"
    # Short-term memory still holds the last messages, more than the thread does.
    stm = ShortTermMemory(store, store.checkpointer())
    entry = stm.load(StmKey("server", "srv-a", "chan-1", world.persona.lineage_id))
    assert entry is not None
    texts = [m.text for m in entry.messages]
    assert len(texts) == stm.policy.max_messages
    assert texts[-2:] == ["message 39", "(scripted model) You said: message 39"]
    assert "message 35" in texts  # trimmed from the thread, kept in short-term memory
    assert "message 35" not in {m.text for m in thread_of(graph)}


def test_thread_limit_defaults_to_the_setting(
    store: KiokuStore, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        store, "settings", store.settings.model_copy(update={"thread_max_messages": 4})
    )
    graph = build_graph(
        ScriptedChatModel(script=Script(fallback=echo)), store, checkpointer=store.checkpointer()
    )
    for turn in range(6):
        graph.invoke(
            {"messages": [HumanMessage(f"m{turn}")]},
            config("conv-default"),
            context=world.context(),
        )
    assert [m.text for m in thread_of(graph, "conv-default")] == [
        "m4",
        "(scripted model) You said: m4",
        "m5",
        "(scripted model) You said: m5",
    ]


def test_nothing_is_trimmed_while_capture_fails(
    store: KiokuStore, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    stm = ShortTermMemory(store, store.checkpointer())
    graph = build_graph(
        ScriptedChatModel(script=Script(fallback=echo)),
        store,
        checkpointer=store.checkpointer(),
        stm=stm,
        max_thread_messages=2,
    )

    def down(*args: Any, **kwargs: Any) -> bool:
        raise psycopg.OperationalError("database is down")

    def turn(n: int) -> None:
        graph.invoke(
            {"messages": [HumanMessage(f"m{n}")]}, config("conv-down"), context=world.context()
        )

    with monkeypatch.context() as patched:
        patched.setattr(stm, "capture", down)
        for n in range(3):
            turn(n)
        assert len(thread_of(graph, "conv-down")) == 6  # kept for the next capture
    turn(3)
    assert [m.text for m in thread_of(graph, "conv-down")] == [
        "m3",
        "(scripted model) You said: m3",
    ]
    entry = stm.load(StmKey("server", "srv-a", "chan-1", world.persona.lineage_id))
    assert entry is not None
    assert [m.text for m in entry.messages if m.role == "user"] == ["m0", "m1", "m2", "m3"]


def test_an_interrupted_turn_is_repaired_and_then_trimmed(store: KiokuStore, world: World) -> None:
    graph = build_graph(
        ScriptedChatModel(script=Script([say("fine")], fallback=echo)),
        store,
        checkpointer=store.checkpointer(),
        max_thread_messages=2,
    )
    dangling = AIMessage(
        "", tool_calls=[{"name": "search_long_term_memory", "args": {}, "id": "c1"}]
    )
    graph.update_state(config("conv-rep"), {"messages": [HumanMessage("old"), dangling]})
    graph.invoke({"messages": [HumanMessage("new")]}, config("conv-rep"), context=world.context())
    after = thread_of(graph, "conv-rep")
    assert [m.text for m in after] == ["new", "fine"]


def test_erasure_reaches_messages_trimmed_from_the_thread(store: KiokuStore, world: World) -> None:
    graph = build_graph(
        ScriptedChatModel(script=Script(fallback=echo)),
        store,
        checkpointer=store.checkpointer(),
        max_thread_messages=2,
    )
    people = (world.alice, world.bob)
    for who, words in [(world.bob, "BOB-TRIMMED-SECRET"), (world.alice, "hello")]:
        graph.invoke(
            {"messages": [HumanMessage(words, name=who.display_name)]},
            config("conv-erase"),
            context=world.context(user=who, participants=people),
        )
    latest = {m.text for m in thread_of(graph, "conv-erase")}
    assert not any("BOB-TRIMMED-SECRET" in t for t in latest)  # trimmed from the thread
    assert "BOB-TRIMMED-SECRET" in everything_text(store)  # yet in older versions

    store.erase_user("u-bob")
    assert "BOB-TRIMMED-SECRET" not in everything_text(store)
    assert [m.text for m in thread_of(graph, "conv-erase")][0] == "hello"


def test_token_counts_are_cached_within_bounds() -> None:
    counter = TiktokenCounter(cache_size=3, cache_chars=1_000)
    for word in ("alpha", "beta", "gamma", "delta"):
        assert counter(word) >= 1
    assert counter.cache_len == 3
    counter("alpha")  # evicted (least recently used), counted again
    assert counter.cache_len == 3
    assert counter.cached_chars == sum(map(len, ("gamma", "delta", "alpha")))
    counter("x" * 200)  # over a tenth of the characters allowed: not cached
    assert counter.cache_len == 3
    small = TiktokenCounter(cache_chars=100)
    for n in range(20):
        small(f"text number {n}")
    assert small.cached_chars <= 100
