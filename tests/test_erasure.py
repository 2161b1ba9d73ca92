"""Forgetting is complete (issue #11, 6): erase_user / erase_server, the CLI, history
retention and the sweeper timer."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from sqlalchemy import func, select, text

from kioku import KiokuSettings, KiokuStore, Participant
from kioku._context_build.build import ContextBuilder
from kioku._db.models import Memory, MemoryHistory, ServerMember, User
from kioku._domain.scopes import ServerScope
from kioku._mcp_server import KiokuMcp, McpScope
from kioku._stm.store import ShortTermMemory
from kioku._sweeper import sweep
from kioku._tools.search import search_long_term_memory
from kioku.graphs import build_graph
from kioku.testing import Script, ScriptedChatModel, call_tool, say
from tests.helpers import World, create_memory, make_world, server_key, update_memory

ALICE_WORDS = ["ALICE-LIKES-JASMINE", "ALICE-OLD-FACT", "ALICE-GLOBAL-FACT", "ALICE-CHAT-LINE"]
REPLY_TO_ALICE = "REPLY-FOR-ALICE"


def everything_text(store: KiokuStore) -> str:
    """Every text column kioku and LangGraph keep, as one string (blobs decoded loosely)."""
    parts = []
    with store.engine.connect() as connection:
        for sql in (
            "SELECT content FROM memories",
            "SELECT coalesce(old_content, '') || ' ' || coalesce(new_content, '') "
            "FROM memory_history",
            "SELECT checkpoint::text || metadata::text FROM checkpoints",
            "SELECT encode(blob, 'escape') FROM checkpoint_blobs WHERE blob IS NOT NULL",
            "SELECT encode(blob, 'escape') FROM checkpoint_writes",
            "SELECT entry::text FROM stm_threads",
        ):
            parts += [str(v) for v in connection.execute(text(sql)).scalars()]
    return "\n".join(parts)


def chat(store: KiokuStore, world: World, who: Participant, said: str, reply: str) -> None:
    graph = build_graph(
        ScriptedChatModel(script=Script([say(reply)])), store, checkpointer=store.checkpointer()
    )
    graph.invoke(
        {"messages": [HumanMessage(said, name=who.display_name)]},
        {"configurable": {"thread_id": "conv-1"}},
        context=world.context(user=who, participants=(world.alice, world.bob)),
    )


def seed(store: KiokuStore) -> tuple[World, dict[str, int]]:
    world = make_world(store)
    personal = {"memory_scope": "target_user", "target_user": "Alice"}
    ids = {
        "kept": create_memory(
            world, {"memory_content": "{user} likes ALICE-LIKES-JASMINE", **personal}
        ),
        "old": create_memory(world, {"memory_content": "{user} ALICE-OLD-FACT", **personal}),
        "bob": create_memory(
            world,
            {
                "memory_content": "{user} likes BOB-OOLONG",
                "memory_scope": "target_user",
                "target_user": "Bob",
            },
        ),
        "server": create_memory(
            world, {"memory_content": "SERVER-WIDE-FACT", "memory_scope": "server_wide"}
        ),
    }
    assert (
        update_memory(
            world, {"memory_id": ids["old"], "memory_content": "", "target_user": "Alice"}
        )["status"]
        == "memory_deleted_successfully"
    )
    with store.transaction() as session:  # a global (lineage 0) memory and one of another persona
        for lineage, words in ((0, "ALICE-GLOBAL-FACT"), (world.other_persona.lineage_id, "x")):
            session.add(
                Memory(
                    scope="personal", user_id="u-alice", persona_lineage_id=lineage, content=words
                )
            )
    chat(store, world, world.alice, "Alice: ALICE-CHAT-LINE", f"{REPLY_TO_ALICE}, noted")
    chat(store, world, world.bob, "Bob: BOB-CHAT-LINE", "Hi Bob")
    return world, ids


def test_erase_user_forgets_everything_and_keeps_the_rest(store: KiokuStore) -> None:
    world, ids = seed(store)
    before = everything_text(store)
    assert all(word in before for word in [*ALICE_WORDS, REPLY_TO_ALICE])
    # Another process-like reader has Alice's memories cached before the erasure.
    builder = ContextBuilder(store, ShortTermMemory(store, store.checkpointer()))
    built = builder.build(world.context(), [HumanMessage("hi")])
    assert "ALICE-LIKES-JASMINE" in " ".join(i.text for i in built.items)

    receipt = store.erase_user("u-alice")

    assert receipt.kind == "user" and receipt.subject_id == "u-alice"
    assert receipt.memories_deleted == 3  # kept, global, other persona's
    assert receipt.history_rows_scrubbed >= 5  # creates, the delete, the erasure's deletes
    assert receipt.memberships_removed == 2 and receipt.directory_rows_deleted == 1
    assert receipt.stm_entries_deleted >= 1  # Alice's own entry in chan-1
    assert receipt.stm_messages_removed >= 2 and receipt.conversation_messages_removed >= 2
    after = everything_text(store)
    for word in [*ALICE_WORDS, REPLY_TO_ALICE]:
        assert word not in after, word
    for word in ("BOB-OOLONG", "SERVER-WIDE-FACT", "BOB-CHAT-LINE"):
        assert word in after, word
    with store.sessions() as session:
        assert not session.scalar(
            select(func.count()).select_from(Memory).where(Memory.user_id == "u-alice")
        )
        tombstones = session.scalars(
            select(MemoryHistory).where(MemoryHistory.memory_id.in_([ids["kept"], ids["old"]]))
        ).all()
        assert {t.action for t in tombstones} == {"create", "delete"}
        assert all(t.old_content is None and t.new_content is None for t in tombstones)
        assert all(t.erased_at is not None and t.created_at is not None for t in tombstones)
        deletes = {t.memory_id: t.actor_user_id for t in tombstones if t.action == "delete"}
        assert deletes == {ids["old"]: "u-alice", ids["kept"]: None}  # the erasure names no one
        assert session.get(User, "u-alice") is None
        assert not session.scalars(
            select(ServerMember).where(ServerMember.user_id == "u-alice")
        ).all()
    # Every read path: context build (same builder, cache warm), search, MCP.
    built = builder.build(world.context(), [HumanMessage("ALICE-LIKES-JASMINE")])
    shown = " ".join(i.text for i in built.items)
    assert "ALICE" not in shown and "BOB-OOLONG" in shown
    payload, _ = search_long_term_memory(
        store, world.context(), {"query": "ALICE-LIKES-JASMINE jasmine"}
    )
    assert "ALICE" not in json.dumps(payload)
    mcp = KiokuMcp(
        store,
        McpScope(server_id="srv-a", user_id="u-alice", user_name="Alice", persona_name="Kioku"),
    )
    assert mcp.call("get_memory", {"memory_id": ids["kept"]})["status"] == "memory_not_found"
    # A later turn by Bob does not bring Alice's lines back from the conversation thread.
    chat(store, world, world.bob, "Bob: still here", "Yes Bob")
    assert "ALICE-CHAT-LINE" not in everything_text(store)


def test_async_twin_and_cli_erase(store: KiokuStore, database_url: str, tmp_path: Any) -> None:
    world, _ = seed(store)
    receipt = asyncio.run(store.aerase_user("u-bob"))
    assert receipt.memories_deleted == 1
    assert "BOB-OOLONG" not in everything_text(store)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KIOKU_")}
    env |= {
        "KIOKU_DATABASE_URL": database_url,
        "KIOKU_DATA_DIR": str(tmp_path),
        "KIOKU_EMBEDDINGS": "hashing",
    }

    def kioku(*args: str) -> dict[str, Any]:
        done = subprocess.run(
            [sys.executable, "-m", "kioku.cli", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return dict(json.loads(done.stdout))

    printed = kioku("erase-user", "u-alice")
    assert printed["kind"] == "user" and printed["memories_deleted"] == 3
    assert "ALICE-LIKES-JASMINE" not in everything_text(store)
    assert kioku("erase-server", "srv-a")["memories_deleted"] == 1
    assert "SERVER-WIDE-FACT" not in everything_text(store)


def _bridged(world: World, content: str) -> int:
    """A personal fact about the bridged Matrix Max: saved server-wide under his name."""
    return create_memory(
        world,
        {"memory_content": content, "memory_scope": "target_user", "target_user": "Matrix Max"},
    )


def test_erasing_a_bridged_user_removes_what_was_saved_about_them(store: KiokuStore) -> None:
    """Issue #39: the server-wide memories saved about a bridged user go with them, and
    their history text too (one edited, one already deleted by the model)."""
    world, _ = seed(store)
    kept = _bridged(world, "{user} likes MAX-LIKES-MATE")
    edited = _bridged(world, "{user} lives in MAX-OLD-TOWN")
    gone = _bridged(world, "{user} MAX-DELETED-FACT")
    assert update_memory(world, {"memory_id": edited, "memory_content": "Matrix Max MAX-NEW-TOWN"})[
        "status"
    ] == ("memory_updated_successfully")
    assert update_memory(world, {"memory_id": gone, "memory_content": ""})["status"] == (
        "memory_deleted_successfully"
    )
    max_words = ["MAX-LIKES-MATE", "MAX-OLD-TOWN", "MAX-NEW-TOWN", "MAX-DELETED-FACT"]
    assert all(word in everything_text(store) for word in max_words)

    receipt = store.erase_user("u-bridge")

    assert receipt.memories_deleted == 2  # kept and edited; gone was already deleted
    # kept: create, delete; edited: create, update, delete; gone: create, delete
    assert receipt.history_rows_scrubbed == 7
    after = everything_text(store)
    for word in max_words:
        assert word not in after, word
    for word in ("SERVER-WIDE-FACT", "ALICE-LIKES-JASMINE", "BOB-OOLONG"):
        assert word in after, word
    with store.sessions() as session:
        assert session.get(Memory, kept) is None and session.get(Memory, edited) is None
        assert not session.scalar(text("SELECT count(*) FROM memory_subjects"))


def test_a_merge_carries_what_it_took_from_a_bridged_users_memory(store: KiokuStore) -> None:
    """A consolidation merge writing a bridged user's fact into another memory: erasing
    that user removes the merged memory too."""
    from tests.test_consolidate import scripted

    world, _ = seed(store)
    about_max = _bridged(world, "{user} likes MAX-LIKES-MATE")
    other = create_memory(
        world, {"memory_content": "The tea club drinks mate", "memory_scope": "server_wide"}
    )
    plan = {"keep": other, "remove": [about_max], "content": "The tea club and Matrix Max"}
    plan["content"] += " drink MAX-LIKES-MATE"
    scope = ServerScope("srv-a", world.persona.lineage_id)
    report = store.consolidate(scope, scripted(json.dumps({"merges": [plan]})), apply=True)
    assert all(outcome.applied for outcome in report.outcomes), report.render()

    assert store.erase_user("u-bridge").memories_deleted == 1  # the merged memory
    assert "MAX-LIKES-MATE" not in everything_text(store)


def test_a_second_erasure_reports_zero(store: KiokuStore) -> None:
    """Issue #39: a receipt counts what its run changed; nothing is left the second time."""
    world, _ = seed(store)
    _bridged(world, "{user} likes MAX-LIKES-MATE")
    for user_id in ("u-alice", "u-bridge"):
        first = store.erase_user(user_id)
        assert first.memories_deleted and first.history_rows_scrubbed, user_id
        again = store.erase_user(user_id).to_dict()
        assert {k: v for k, v in again.items() if isinstance(v, int)} == dict.fromkeys(
            (k for k, v in again.items() if isinstance(v, int)), 0
        ), again
    store.erase_server("srv-a")
    again = store.erase_server("srv-a").to_dict()
    assert not any(v for v in again.values() if isinstance(v, int)), again


def test_erasing_the_server_removes_its_bridged_memories_records(store: KiokuStore) -> None:
    world, _ = seed(store)
    _bridged(world, "{user} likes MAX-LIKES-MATE")
    assert store.erase_server("srv-a").memories_deleted == 2
    with store.sessions() as session:
        assert not session.scalar(text("SELECT count(*) FROM memory_subjects"))
    assert store.erase_user("u-bridge").memories_deleted == 0


def test_erase_server(store: KiokuStore) -> None:
    world, _ = seed(store)
    receipt = store.erase_server("srv-a")
    assert receipt.kind == "server" and receipt.memories_deleted == 1
    assert receipt.stm_entries_deleted >= 2
    after = everything_text(store)
    assert "SERVER-WIDE-FACT" not in after
    assert "ALICE-LIKES-JASMINE" in after  # personal memories follow the person, not the server
    with store.sessions() as session:
        assert not session.scalars(
            select(ServerMember).where(ServerMember.server_id == "srv-a")
        ).all()


def old_history_row(store: KiokuStore, days: int) -> None:
    with store.transaction() as session:
        session.execute(
            text(
                "INSERT INTO memory_history (memory_id, action, new_content, created_at) "
                "VALUES (1, 'create', 'ANCIENT', now() - make_interval(days => :d))"
            ),
            {"d": days},
        )


def test_history_retention_by_the_sweeper(store: KiokuStore) -> None:
    make_world(store)
    old_history_row(store, 400)
    old_history_row(store, 10)
    result = sweep(store)
    assert result.ran and result.history_rows_deleted == 1
    with store.sessions() as session:
        assert session.scalar(select(func.count()).select_from(MemoryHistory)) == 1


def test_sweeper_runs_on_a_timer_in_long_lived_processes(engine: Any, database_url: str) -> None:
    settings = KiokuSettings(
        database_url=database_url, history_retention_days=30, sweep_interval_minutes=0.01
    )
    store = KiokuStore(engine, settings=settings)
    try:
        old_history_row(store, 31)
        build_graph(ScriptedChatModel(script=Script()), store)  # a graph starts the timer
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with store.sessions() as session:
                left = session.scalar(
                    select(func.count())
                    .select_from(MemoryHistory)
                    .where(MemoryHistory.new_content == "ANCIENT")
                )
            if not left:
                break
            time.sleep(0.2)
        assert not left
    finally:
        store.close()
        with engine.begin() as connection:
            connection.execute(text("TRUNCATE memory_history"))


def test_erasure_reaches_old_versions_summaries_and_repeated_memory_text(
    store: KiokuStore,
) -> None:
    world = make_world(store)
    script = Script(
        [
            call_tool(
                "create_long_term_memory",
                memory_content="{user} has the phone number BOB-PHONE-555",
                memory_scope="target_user",
                target_user="Bob",
            ),
            say("Saved Bob's number."),
            call_tool(
                "create_long_term_memory",
                memory_content="The wifi password is SRV-WIFI-777",
                memory_scope="server_wide",
            ),
            say("Saved the wifi password."),
        ],
        fallback=say("ok"),
    )
    graph = build_graph(
        ScriptedChatModel(script=script),
        store,
        checkpointer=store.checkpointer(),
        max_thread_messages=100,  # the thread holds the whole conversation here
    )
    people = (world.alice, world.bob)

    def said(who: Participant, words: str) -> None:
        graph.invoke(
            {"messages": [HumanMessage(words, name=who.display_name)]},
            {"configurable": {"thread_id": "conv-9"}},
            context=world.context(user=who, participants=people),
        )

    said(world.alice, "Alice: remember Bob's number")
    said(world.alice, "Alice: and the wifi password")
    said(world.bob, "Bob: BOB-ROTATED-SECRET")
    for n in range(8):  # Bob's line rotates out of the 10-message window
        said(world.alice, f"Alice: filler {n}")
    ShortTermMemory(store, store.checkpointer()).write_summary(
        world.context(channel_id="chan-1"), "Bob is coming on Friday"
    )
    before = everything_text(store)
    assert all(w in before for w in ("BOB-PHONE-555", "BOB-ROTATED-SECRET", "SRV-WIFI-777"))

    store.erase_user("u-bob")
    after = everything_text(store)
    assert "BOB-PHONE-555" not in after and "BOB-ROTATED-SECRET" not in after
    assert "Bob is coming on Friday" not in after
    assert "SRV-WIFI-777" in after and "filler 7" in after

    receipt = store.erase_server("srv-a")
    assert receipt.memories_deleted == 1 and receipt.conversation_messages_removed >= 2
    assert "SRV-WIFI-777" not in everything_text(store)
    # The conversation goes on: every tool call still has its (redacted) result.
    said(world.alice, "Alice: still there?")


def test_erasure_redacts_every_form_the_bot_repeated(store: KiokuStore) -> None:
    """Non-ASCII and quoted memory text in tool arguments and results, search results
    (rendered as data), and short-term summaries naming the person."""
    world = make_world(store)
    secrets = [
        "東京都港区六本木ひみつ",
        'the code "QUOTE-7391" opens it',
        "line one\nSEARCHNL-5522 [x]",
    ]
    script = Script(
        [
            *(
                call_tool(
                    "create_long_term_memory",
                    memory_content="{user} " + secret,
                    memory_scope="target_user",
                    target_user="Bob",
                )
                for secret in secrets
            ),
            say("Saved."),
            call_tool("search_long_term_memory", query="code line opens"),
            call_tool("update_short_term_memory", summary="Bob told us BOB-SUMMARY-SECRET"),
            say("Found them."),
        ],
        fallback=say("ok"),
    )
    graph = build_graph(ScriptedChatModel(script=script), store, checkpointer=store.checkpointer())
    for words in ("Alice: remember these about Bob", "Alice: what do you know about Bob?"):
        graph.invoke(
            {"messages": [HumanMessage(words, name="Alice")]},
            {"configurable": {"thread_id": "conv-7"}},
            context=world.context(participants=(world.alice, world.bob)),
        )
    before = everything_text(store)
    assert "SEARCHNL-5522" in before and "BOB-SUMMARY-SECRET" in before
    store.erase_user("u-bob")
    after = everything_text(store)
    for needle in ("東京都港区六本木ひみつ", "QUOTE-7391", "SEARCHNL-5522", "BOB-SUMMARY-SECRET"):
        assert needle not in after, needle


def test_history_seeded_with_a_full_persons_words_is_not_captured(store: KiokuStore) -> None:
    world = make_world(store)
    graph = build_graph(
        ScriptedChatModel(script=Script(fallback=say("ok"))),
        store,
        checkpointer=store.checkpointer(),
    )
    graph.invoke(
        {
            "messages": [
                HumanMessage("DAVE-SEEDED-SECRET", name="Dave"),
                AIMessage("REPLY-TO-DAVE-SEEDED"),
                HumanMessage("hey kioku", name="Alice"),
            ]
        },
        {"configurable": {"thread_id": "conv-8"}},
        context=world.context(participants=(world.alice, world.dave)),
    )
    entry = ShortTermMemory(store, store.checkpointer()).load(server_key(world))
    assert entry is not None
    texts = " ".join(m.text for m in entry.messages)
    assert "hey kioku" in texts
    assert "DAVE-SEEDED-SECRET" not in texts and "REPLY-TO-DAVE-SEEDED" not in texts
