"""FULL privacy means never captured (issue #11, 1): through the per-turn graph, over
several turns with mixed participants, whoever triggers the capture."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from langchain_core.messages import HumanMessage, ToolMessage
from sqlalchemy import text

from kioku import KiokuStore, Participant, PrivacyLevel
from kioku._context_build.build import ContextBuilder
from kioku._stm.model import StmKey, StmMessage
from kioku._stm.store import ShortTermMemory
from kioku.graphs import build_graph
from kioku.testing import Script, ScriptedChatModel, call_tool, say
from tests.helpers import World, make_world

SECRET = "DAVE-SECRET-PLAN"
REPLY_TO_SECRET = "ANSWER-FOR-DAVE"


def stm_texts(store: KiokuStore, world: World) -> str:
    """Every message and summary of every short-term memory entry, as one string."""
    stm = ShortTermMemory(store, store.checkpointer())
    lineage = world.persona.lineage_id
    keys = [StmKey("server", "srv-a", c, lineage) for c in ("chan-1", "chan-2")]
    keys += [
        StmKey("user", u, c, lineage)
        for u in ("u-alice", "u-bob", "u-dave")
        for c in ("chan-1", "chan-2")
    ]
    found = []
    for key in keys:
        entry = stm.load(key)
        if entry is not None:
            found += [m.text for m in entry.messages] + [entry.summary or ""]
    return " | ".join(found)


def checkpoint_holds(store: KiokuStore, needle: str) -> bool:
    """Whether any stored short-term memory entry (or a checkpoint of one) holds ``needle``."""
    with store.engine.connect() as connection:
        entries = connection.execute(
            text("SELECT count(*) FROM stm_threads WHERE entry::text LIKE :p"),
            {"p": f"%{needle}%"},
        ).scalar_one()
        blobs = connection.execute(
            text(
                "SELECT count(*) FROM checkpoint_blobs WHERE thread_id LIKE 'kioku-stm:%' "
                "AND position(convert_to(:n, 'UTF8') IN blob) > 0"
            ),
            {"n": needle},
        ).scalar_one()
        checkpoints = connection.execute(
            text(
                "SELECT count(*) FROM checkpoints WHERE thread_id LIKE 'kioku-stm:%' "
                "AND (checkpoint::text LIKE :p OR metadata::text LIKE :p)"
            ),
            {"p": f"%{needle}%"},
        ).scalar_one()
        writes = connection.execute(
            text(
                "SELECT count(*) FROM checkpoint_writes WHERE thread_id LIKE 'kioku-stm:%' "
                "AND position(convert_to(:n, 'UTF8') IN blob) > 0"
            ),
            {"n": needle},
        ).scalar_one()
    return bool(entries or blobs or checkpoints or writes)


def turn(graph: Any, world: World, who: Participant, said: str, **context: Any) -> Any:
    people = context.pop("participants", (world.alice, world.bob, world.dave))
    return graph.invoke(
        {"messages": [HumanMessage(said, name=who.display_name)]},
        {"configurable": {"thread_id": context.pop("thread", "conv-1")}},
        context=world.context(user=who, participants=people, **context),
    )


def test_full_privacy_messages_never_enter_short_term_memory(store: KiokuStore) -> None:
    world = make_world(store)
    script = Script(
        [
            say("Noted, Alice: oolong on Friday."),
            # Dave's turn: the model even tries to write a summary of what Dave said.
            call_tool("update_short_term_memory", summary=f"Dave said {SECRET}"),
            say(f"{REPLY_TO_SECRET}: I will keep that to myself."),
            say("Hi Bob, Friday it is."),
            say("Alice, Bob agreed."),
            say("Over in the other channel."),
        ]
    )
    graph = build_graph(ScriptedChatModel(script=script), store, checkpointer=store.checkpointer())
    turn(graph, world, world.alice, "Alice: shall we brew oolong on Friday?")
    dave_turn = turn(graph, world, world.dave, f"Dave: {SECRET} is in the shed")
    refusals = [m for m in dave_turn["messages"] if isinstance(m, ToolMessage)]
    assert [json.loads(str(m.content))["status"] for m in refusals] == [
        "short_term_memory_update_refused"
    ]
    assert "update_short_term_memory" not in script.offered[1]
    # Later turns by others capture the thread's recent messages: never Dave's, nor the
    # reply to him, in the server entry or anyone's user entry.
    # Dave has left when Bob's turn runs: the stamps made on Dave's turn still hold.
    turn(graph, world, world.bob, "Bob: Friday works for me", participants=(world.bob,))
    turn(graph, world, world.alice, "Alice: great")
    captured = stm_texts(store, world)
    assert "oolong" in captured and "Friday works" in captured
    assert SECRET not in captured and REPLY_TO_SECRET not in captured
    for needle in (SECRET, REPLY_TO_SECRET):
        assert not checkpoint_holds(store, needle)

    # Another channel recalls chan-1 without Dave's words.
    builder = ContextBuilder(store, ShortTermMemory(store, store.checkpointer()))
    built = builder.build(
        world.context(channel_id="chan-2", channel_name="random"), [HumanMessage("hi")]
    )
    recalled = " ".join(i.text for i in built.items if i.tag == "stm_other_channels")
    assert "oolong" in recalled
    assert SECRET not in recalled and REPLY_TO_SECRET not in recalled


def test_a_person_who_turns_invisible_is_not_captured_or_recalled(store: KiokuStore) -> None:
    world = make_world(store)
    graph = build_graph(
        ScriptedChatModel(script=Script(fallback=say("ok"))),
        store,
        checkpointer=store.checkpointer(),
    )
    turn(graph, world, world.bob, "Bob: BOB-EARLY-WORDS")
    hidden_bob = replace(world.bob, privacy=PrivacyLevel.FULL)
    people = (world.alice, hidden_bob)
    graph.invoke(
        {"messages": [HumanMessage("Alice: and now?", name="Alice")]},
        {"configurable": {"thread_id": "conv-1"}},
        context=world.context(user=world.alice, participants=people),
    )
    builder = ContextBuilder(store, ShortTermMemory(store, store.checkpointer()))
    built = builder.build(
        world.context(channel_id="chan-2", participants=people), [HumanMessage("hi")]
    )
    recalled = " ".join(i.text for i in built.items if i.tag == "stm_other_channels")
    assert "and now?" in recalled and "BOB-EARLY-WORDS" not in recalled


def test_python_capture_drops_messages_of_invisible_participants(store: KiokuStore) -> None:
    world = make_world(store)
    stm = ShortTermMemory(store, store.checkpointer())
    messages = [
        StmMessage("user", "Alice", "hello all", world_time(), "u-alice"),
        StmMessage("user", "Dave", SECRET, world_time(), "u-dave"),
        StmMessage("assistant", "Kioku", REPLY_TO_SECRET, world_time(), "u-dave"),
    ]
    assert stm.capture(world.context(), messages)
    assert stm.capture(world.context(user=world.dave), messages) is False
    captured = stm_texts(store, world)
    assert "hello all" in captured
    assert SECRET not in captured and REPLY_TO_SECRET not in captured


def world_time() -> Any:
    from tests.helpers import T0

    return T0


def test_messages_relayed_in_someone_elses_turn_belong_to_their_speaker(
    store: KiokuStore,
) -> None:
    """An application passes several speakers' messages in one turn (``name`` says who):
    a FULL person's words are not captured, and no summary is written while they are
    in the recent dialogue, whoever triggers the turn."""
    world = make_world(store)
    script = Script(
        [
            call_tool("update_short_term_memory", summary=f"Dave said {SECRET}"),
            say("Alice, noted."),
            call_tool("update_short_term_memory", summary=f"recap: {SECRET}"),
            say("Bob, hi."),
        ]
    )
    graph = build_graph(ScriptedChatModel(script=script), store, checkpointer=store.checkpointer())
    graph.invoke(
        {
            "messages": [
                HumanMessage(f"{SECRET} under the mat", name="Dave"),
                HumanMessage("UNKNOWN-SPEAKER-WORDS", name="Somebody Else"),
                HumanMessage("Alice: did you hear that?", name="Alice"),
            ]
        },
        {"configurable": {"thread_id": "conv-1"}},
        context=world.context(user=world.alice, participants=(world.alice, world.dave)),
    )
    state = turn(graph, world, world.bob, "Bob: hello", participants=(world.alice, world.bob))
    statuses = [
        json.loads(str(m.content))["status"]
        for m in state["messages"]
        if isinstance(m, ToolMessage)
    ]
    assert statuses == ["short_term_memory_update_refused"] * 2
    captured = stm_texts(store, world)
    assert "did you hear that" in captured and "Bob: hello" in captured
    assert SECRET not in captured and "UNKNOWN-SPEAKER-WORDS" not in captured
    assert not checkpoint_holds(store, SECRET)


def test_words_of_someone_now_full_are_not_recalled_even_when_they_are_away(
    store: KiokuStore,
) -> None:
    world = make_world(store)
    stm = ShortTermMemory(store, store.checkpointer())
    stm.capture(
        world.context(user=world.bob, participants=(world.alice, world.bob)),
        [
            StmMessage("user", "Bob", "BOB-OLD-WORDS", world_time(), "u-bob"),
            StmMessage("user", "Alice", "alice was here", world_time(), "u-alice"),
        ],
    )
    with store.accounts() as accounts:  # Bob asks to be invisible from now on
        accounts.upsert_user("u-bob", "Bob", privacy=PrivacyLevel.FULL)
    built = ContextBuilder(store, stm).build(
        world.context(channel_id="chan-2", participants=(world.alice,)),
        [HumanMessage("hi")],
        now=world_time(),
    )
    recalled = " ".join(i.text for i in built.items if i.tag == "stm_other_channels")
    assert "alice was here" in recalled and "BOB-OLD-WORDS" not in recalled


def test_the_turns_own_user_stored_as_full_is_not_recalled(store: KiokuStore) -> None:
    """A user who opted out (their ``users`` row says FULL) while the application's context
    still says otherwise: their earlier words are not recalled into a channel others see."""
    world = make_world(store)
    stm = store.short_term_memory()
    said = world.context(channel_id="chan-1", participants=(world.alice, world.bob))
    stm.capture(said, [StmMessage("user", "Alice", "my door code is 4711", stm.clock(), "u-alice")])
    with store.accounts() as accounts:
        accounts.upsert_user("u-alice", "Alice", privacy=PrivacyLevel.FULL)
    later = world.context(channel_id="chan-2", participants=(world.alice, world.bob))
    built = ContextBuilder(store, stm).build(later, [HumanMessage("hi", name="Alice")])
    assert not any("4711" in item.text for item in built.items)
