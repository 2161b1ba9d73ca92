"""Fault injection on a real server: killed connections, timeouts, a server stopped mid-turn.

Every case ends in a documented failure status (or a clean retry), never a partial write,
never a tool call left without a result; service resumes when the database is back.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import psycopg
import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.exc import OperationalError

from kioku import (
    KiokuSettings,
    KiokuStore,
    create_long_term_memory_tool,
    update_long_term_memory_tool,
)
from kioku._db.embedded import EmbeddedPostgres
from kioku._db.engine import make_engine, normalise_url, ping_when_idle
from kioku.graphs import build_graph
from kioku.graphs._repair import INTERRUPTED
from kioku.testing import Script, ScriptedChatModel, call_tool, say
from tests.helpers import World, make_world, run_tool, table_counts

T = TypeVar("T")
REMEMBER = {
    "memory_content": "{user} likes tea",
    "memory_scope": "target_user",
    "target_user": "Alice",
}
CHANGE = {"memory_content": "{user} likes coffee", "target_user": "Alice"}


@pytest.fixture
def world(store: KiokuStore) -> World:
    return make_world(store)


@pytest.fixture
def admin(engine: Engine) -> Iterator[Engine]:
    """A connection of the tests' own, to act on kioku's connections from outside."""
    yield engine.execution_options(isolation_level="AUTOCOMMIT")


@contextmanager
def kill_connection_when(
    store: KiokuStore, admin: Engine, matches: Callable[[str], bool]
) -> Iterator[list[int]]:
    """Terminate the backend of kioku's connection just before a matching statement runs."""
    killed: list[int] = []

    def before(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if matches(statement) and not killed:
            pid = cursor.connection.info.backend_pid
            with admin.connect() as connection:
                connection.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
            killed.append(pid)

    event.listen(store.engine, "before_cursor_execute", before)
    try:
        yield killed
    finally:
        event.remove(store.engine, "before_cursor_execute", before)


def test_connection_killed_during_a_create(store: KiokuStore, world: World, admin: Engine) -> None:
    create = create_long_term_memory_tool(store)
    with kill_connection_when(store, admin, lambda sql: "kioku_create_memory" in sql) as killed:
        outcome = run_tool(create, REMEMBER, world.context())
    assert killed, "the statement never ran"
    # The reply was lost, so the flow found out on a new connection: the create is
    # idempotent, so running it again either finds the row or (here) saves it once.
    assert outcome.result["status"] == "memory_saved_successfully"
    assert table_counts(store) == (1, 1)  # memory and its history row, once
    assert len(world.notices) == 1
    again = run_tool(create, REMEMBER, world.context())
    assert again.result["status"] == "memory_saved_successfully"
    assert again.result["already_saved"] is True
    assert table_counts(store) == (1, 1)


def test_a_create_failing_after_its_insert_leaves_nothing(
    store: KiokuStore, world: World, admin: Engine
) -> None:
    """The one-statement create is atomic: a failing history row takes the memory with it."""
    with admin.connect() as connection:
        connection.execute(
            text(
                "ALTER TABLE memory_history ADD CONSTRAINT no_creates "
                "CHECK (action <> 'create') NOT VALID"
            )
        )
    try:
        outcome = run_tool(create_long_term_memory_tool(store), REMEMBER, world.context())
    finally:
        with admin.connect() as connection:
            connection.execute(text("ALTER TABLE memory_history DROP CONSTRAINT no_creates"))
    assert outcome.result["status"] == "memory_save_failed_db_error"
    assert table_counts(store) == (0, 0)
    assert world.notices == []


def test_connection_killed_before_commit(store: KiokuStore, world: World, admin: Engine) -> None:
    """A unit of work that read before writing commits explicitly; losing the commit is safe.

    A delete locks its memory, then deletes it (an update is one statement, see below).
    """
    created = run_tool(create_long_term_memory_tool(store), REMEMBER, world.context())
    killed: list[int] = []

    def before_commit(conn: Any) -> None:
        if not killed:
            pid = conn.connection.dbapi_connection.info.backend_pid
            with admin.connect() as connection:
                connection.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
            killed.append(pid)

    event.listen(store.engine, "commit", before_commit)
    try:
        outcome = run_tool(
            update_long_term_memory_tool(store),
            {
                "memory_id": created.result["memory_id"],
                "memory_content": "",
                "target_user": "Alice",
            },
            world.context(),
        )
    finally:
        event.remove(store.engine, "commit", before_commit)
    assert killed
    assert outcome.result["status"] == "memory_update_failed_db_error"
    assert table_counts(store) == (1, 1)  # the create stands, the delete left no trace
    assert len(world.notices) == 1  # only the create's notice


def test_connection_killed_during_an_update(store: KiokuStore, world: World, admin: Engine) -> None:
    created = run_tool(create_long_term_memory_tool(store), REMEMBER, world.context())
    memory_id = created.result["memory_id"]
    update = update_long_term_memory_tool(store)
    with kill_connection_when(store, admin, lambda sql: "kioku_update_memory_versioned" in sql):
        outcome = run_tool(
            update,
            {"memory_id": memory_id, **CHANGE},
            world.context(),
        )
    assert outcome.result["status"] == "memory_update_failed_db_error"
    with store.sessions() as session:
        content = session.execute(
            text("SELECT content FROM memories WHERE id = :id"), {"id": memory_id}
        ).scalar_one()
    assert content == "{user} likes tea"
    assert table_counts(store) == (1, 1)  # no history row for the failed update
    again = run_tool(update, {"memory_id": memory_id, **CHANGE}, world.context())
    assert again.result["status"] == "memory_updated_successfully"


def test_every_connection_killed_between_calls(
    store: KiokuStore, world: World, admin: Engine
) -> None:
    """Pools notice dead connections on checkout and reconnect: a clean retry."""
    create = create_long_term_memory_tool(store)
    assert run_tool(create, REMEMBER, world.context()).result["status"] == (
        "memory_saved_successfully"
    )
    with admin.connect() as connection:
        mine = connection.execute(text("SELECT pg_backend_pid()")).scalar_one()
        connection.execute(
            text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> :mine"
            ),
            {"mine": mine},
        )
    outcome = run_tool(
        create,
        {"memory_content": "The shop opens at nine", "memory_scope": "server_wide"},
        world.context(),
    )
    assert outcome.result["status"] == "memory_saved_successfully"


def test_idle_connections_are_checked_before_use(database_url: str, admin: Engine) -> None:
    """Pooled connections idle past the threshold are pinged and replaced when dead;
    one used just now is trusted, fails once when it has died, and is then replaced.

    No timing window: one engine pings every checkout, the other none within the test.
    """

    def pool(idle_seconds: float) -> Engine:
        engine = create_engine(normalise_url(database_url), pool_size=1, max_overflow=0)
        return ping_when_idle(engine, idle_seconds=idle_seconds)

    def kill_the_pooled_connection(engine: Engine) -> None:
        with engine.connect() as connection:
            pid = connection.execute(text("SELECT pg_backend_pid()")).scalar_one()
        with admin.connect() as connection:
            connection.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})

    pinged, trusted = pool(0.0), pool(3600.0)
    try:
        kill_the_pooled_connection(pinged)
        with pinged.connect() as connection:
            assert connection.execute(text("SELECT 1")).scalar_one() == 1
        kill_the_pooled_connection(trusted)
        with pytest.raises(OperationalError), trusted.connect() as connection:
            connection.execute(text("SELECT 1"))
        with trusted.connect() as connection:
            assert connection.execute(text("SELECT 1")).scalar_one() == 1
    finally:
        pinged.dispose()
        trusted.dispose()


def test_statement_timeout_while_the_scope_is_locked(
    store: KiokuStore, engine: Engine, settings: KiokuSettings, admin: Engine
) -> None:
    """A writer stuck behind a lock is cancelled by the statement timeout: a db_error."""
    # Its own engine with a short timeout; the fixture's store empties the tables after.
    store = KiokuStore(
        make_engine(engine.url.render_as_string(hide_password=False), statement_timeout_ms=300),
        settings=settings,
    )
    world = make_world(store)
    scope_key = f"server:srv-a:{world.persona.lineage_id}"
    create = create_long_term_memory_tool(store)
    with admin.connect() as holder:
        holder.execute(text("BEGIN"))
        holder.execute(
            text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))"), {"key": scope_key}
        )
        outcome = run_tool(
            create,
            {"memory_content": "The shop opens at nine", "memory_scope": "server_wide"},
            world.context(),
        )
        holder.execute(text("ROLLBACK"))
    assert outcome.result["status"] == "memory_save_failed_db_error"
    assert "statement timeout" in outcome.result["reason"]
    assert table_counts(store) == (0, 0)
    again = run_tool(
        create,
        {"memory_content": "The shop opens at nine", "memory_scope": "server_wide"},
        world.context(),
    )
    assert again.result["status"] == "memory_saved_successfully"
    store.close()


# --- the server stopped in the middle of a turn ---------------------------------------


@pytest.fixture
def private_server(server_data_dir: Path) -> Iterator[EmbeddedPostgres]:
    """A server of this test's own, so stopping it disturbs no other test."""
    server = EmbeddedPostgres(server_data_dir)
    yield server
    server.stop()


@pytest.fixture
def private_store(private_server: EmbeddedPostgres) -> Iterator[KiokuStore]:
    url = private_server.url
    store = KiokuStore(make_engine(url), settings=KiokuSettings(database_url=url))
    store.setup()
    yield store
    store.close()


def eventually(call: Callable[[], T], timeout: float = 60.0) -> T:
    """``call()``, retried while the database is still coming back."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return call()
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def all_calls_answered(messages: Sequence[BaseMessage]) -> bool:
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    calls = [c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]
    return all(call in answered for call in calls)


def tool_statuses(messages: Sequence[BaseMessage]) -> list[str]:
    return [json.loads(str(m.content))["status"] for m in messages if isinstance(m, ToolMessage)]


def test_server_stopped_before_the_tools_run(
    private_server: EmbeddedPostgres,
    private_store: KiokuStore,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Tools answer with db_error, capture is skipped, and the turn still completes."""
    world = make_world(private_store)

    def stop_then_call(prompt: Sequence[BaseMessage], offered: tuple[str, ...]) -> AIMessage:
        private_server.kill()
        return call_tool("create_long_term_memory", **REMEMBER)

    script = Script([stop_then_call, say("I could not save that right now.")])
    graph = build_graph(
        ScriptedChatModel(script=script), private_store, checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "t1"}}
    with caplog.at_level(logging.ERROR):
        state = graph.invoke(
            {"messages": [HumanMessage("Remember that I like tea", name="Alice")]},
            config,
            context=world.context(),
        )
    assert tool_statuses(state["messages"]) == ["memory_save_failed_db_error"]
    assert all_calls_answered(state["messages"])
    assert state["messages"][-1].text == "I could not save that right now."
    assert "short-term memory capture skipped" in caplog.text

    private_server.start_again()
    assert table_counts(private_store) == (0, 0)
    script.add(call_tool("create_long_term_memory", **REMEMBER), say("Saved."))
    state = graph.invoke(
        {"messages": [HumanMessage("Remember that I like tea", name="Alice")]},
        config,
        context=world.context(),
    )
    assert tool_statuses(state["messages"])[-1] == "memory_saved_successfully"
    assert table_counts(private_store) == (1, 1)


def test_server_stopped_while_a_tool_runs_leaves_no_dangling_call(
    private_server: EmbeddedPostgres, private_store: KiokuStore
) -> None:
    """The checkpointer shares the database: the turn fails, and the next one repairs."""
    world = make_world(private_store)
    stopped = threading.Event()

    def stop_at_the_write(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if "kioku_create_memory" in statement and not stopped.is_set():
            stopped.set()
            private_server.kill()

    script = Script([call_tool("create_long_term_memory", **REMEMBER), say("(not reached)")])
    graph = build_graph(
        ScriptedChatModel(script=script),
        private_store,
        checkpointer=private_store.checkpointer(),
    )
    config = {"configurable": {"thread_id": "t1"}}
    event.listen(private_store.engine, "before_cursor_execute", stop_at_the_write)
    try:
        with pytest.raises(psycopg.OperationalError):  # saving the checkpoint fails
            graph.invoke(
                {"messages": [HumanMessage("Remember that I like tea", name="Alice")]},
                config,
                context=world.context(),
                durability="sync",  # the model's tool call is saved before the tools run
            )
    finally:
        event.remove(private_store.engine, "before_cursor_execute", stop_at_the_write)
    assert stopped.is_set()

    private_server.start_again()
    # The checkpointer's pool reconnects with a backoff: service resumes within seconds.
    saved = eventually(lambda: graph.get_state(config).values["messages"])
    assert not all_calls_answered(saved)  # the crash left the call open
    script.replies = [say("Sorry, something went wrong; could you say that again?")]
    state = graph.invoke(
        {"messages": [HumanMessage("Did you get that?", name="Alice")]},
        config,
        context=world.context(),
    )
    assert all_calls_answered(state["messages"])
    assert INTERRUPTED in tool_statuses(state["messages"])
    calls = [
        i for i, m in enumerate(state["messages"]) if isinstance(m, AIMessage) and m.tool_calls
    ]
    assert isinstance(state["messages"][calls[0] + 1], ToolMessage)  # result right after call
    assert table_counts(private_store) == (0, 0)
