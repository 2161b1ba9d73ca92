"""kioku behind PgBouncer in transaction mode, with fewer server connections than clients.

PgBouncer (Debian's 1.18, default settings but ``pool_mode = transaction`` and two server
connections per database) runs each transaction on whichever server session is free, so
anything kept in a session (a prepared statement, a ``SET``, a session's advisory lock)
breaks or reaches another client. Through it: setup from several processes at once, the
README Quickstart agent in two worker processes, the per-turn graph, ``kioku mcp`` and
``kioku sweep`` all work, nothing is logged, and no server session keeps kioku's state.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from langchain_core.messages import HumanMessage, ToolMessage
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from sqlalchemy import Engine, insert, text
from sqlalchemy.engine import make_url

from kioku import (
    DatabaseUnavailableError,
    KiokuSettings,
    KiokuStore,
    Participant,
    TurnContext,
    build_graph,
)
from kioku._db.direct import reaches_server
from kioku._db.embedded import EmbeddedPostgres
from kioku._db.engine import make_engine
from kioku._db.models import Memory, User
from kioku._db.vectors import HNSW_SETTINGS_APPLIED
from kioku.testing import Script, ScriptedChatModel, call_tool, say
from tests.helpers import process_env
from tests.pgbouncer import Pooler
from tests.pooler_worker import FACTS

TROUBLE = re.compile(
    r"prepared statement|capture skipped|Traceback|ERROR|you don't own a lock|"
    r"unsupported startup parameter",
    re.IGNORECASE,
)
"""What no process, and no server log line, may say while kioku runs behind the pooler."""
TURNS = 8
"""Turns per worker: more than psycopg's ``prepare_threshold`` (5) uses of each statement."""


def assert_quiet(output: str) -> None:
    """Fail on any line of ``output`` that reports trouble."""
    assert not [line for line in output.splitlines() if TROUBLE.search(line)], output


@pytest.fixture
def server_log(embedded_pg: EmbeddedPostgres | None) -> Iterator[None]:
    """Fail the test if the embedded server logged trouble while it ran."""
    if embedded_pg is None:
        yield
        return
    start = embedded_pg.log_file.stat().st_size
    yield
    with embedded_pg.log_file.open(errors="replace") as log:
        log.seek(start)
        assert_quiet(log.read())


def _direct(database_url: str, pooled_url: str) -> Engine:
    """An engine on the pooled URL's database, straight to the server."""
    name = make_url(pooled_url).database
    url = make_url(database_url).set(database=name).render_as_string(hide_password=False)
    return make_engine(url)


def _run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], env=env, capture_output=True, text=True, check=False, timeout=600
    )


def _advisory_locks(engine: Engine) -> int:
    with engine.connect() as connection:
        return int(
            connection.execute(
                text("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")
            ).scalar_one()
        )


@pytest.mark.usefixtures("server_log")
def test_setup_from_three_processes_at_once(pooled_empty_database: str, database_url: str) -> None:
    env = process_env(pooled_empty_database)
    workers = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.pooler_worker", "setup"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    outcomes = []
    for worker in workers:
        out, err = worker.communicate(timeout=600)
        assert worker.returncode == 0, err
        assert_quiet(err)
        outcomes.append(json.loads(out))
    assert sorted(outcomes) == ["created", "unchanged", "unchanged"]
    direct = _direct(database_url, pooled_empty_database)
    assert _advisory_locks(direct) == 0
    direct.dispose()


def _agent_worker(url: str, user: str) -> subprocess.Popen[str]:
    worker = subprocess.Popen(
        [sys.executable, "-m", "tests.pooler_worker", "agent", user, str(TURNS)],
        env=process_env(url),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert worker.stdout is not None
    ready = worker.stdout.readline()
    assert ready == "ready\n", ready + (worker.stderr.read() if worker.stderr else "")
    return worker


@pytest.mark.usefixtures("server_log")
def test_quickstart_agent_in_two_worker_processes(pooled_database: str, database_url: str) -> None:
    workers = {user: _agent_worker(pooled_database, user) for user in ("alice", "bob")}
    for worker in workers.values():
        assert worker.stdin is not None
        worker.stdin.write("go\n")
        worker.stdin.flush()
    results = {}
    for user, worker in workers.items():
        out, err = worker.communicate(timeout=600)
        assert worker.returncode == 0, err
        assert_quiet(err)
        results[user] = json.loads(out)
    for user, result in results.items():
        assert [r["status"] for r in result["saved"]] == ["memory_saved_successfully"] * TURNS
        (found,) = result["found"]
        assert found["status"] == "memories_found", found
        assert all(f" {user} " in memory for memory in found["memories"]), found
    direct = _direct(database_url, pooled_database)
    with direct.connect() as connection:
        rows = connection.execute(text("SELECT user_id, content FROM memories")).all()
    direct.dispose()
    assert sorted(rows) == sorted(
        (user_id, f"{{user}} {fact}") for user_id in workers for fact in FACTS[:TURNS]
    )


def _graph_turns(store: KiokuStore, turns: int) -> list[dict[str, Any]]:
    with store.accounts() as accounts:
        accounts.upsert_server("guild-1", "Tea House", self_teaching_enabled=True)
        persona = accounts.ensure_persona("guild-1", "Kioku")
    alice = Participant("user-1", "Alice")
    script = Script()
    graph = build_graph(ScriptedChatModel(script=script), store, checkpointer=store.checkpointer())
    results: list[dict[str, Any]] = []
    for turn in range(turns):
        channel = ("general", "garden")[turn % 2]
        context = TurnContext(
            server_id="guild-1",
            server_name="Tea House",
            channel_id=channel,
            user=alice,
            participants=(alice,),
            persona=persona,
            bot_user_id="bot",
        )
        script.add(
            call_tool(
                "create_long_term_memory",
                memory_content=f"{{user}} {FACTS[turn]}",
                memory_scope="target_user",
                target_user="Alice",
            ),
            say("Noted."),
        )
        message = HumanMessage(f"Remember that I {FACTS[turn]}", id=f"turn-{turn}")
        state_in = {"messages": [message]}
        config = {"configurable": {"thread_id": channel}}
        if turn % 2:
            state = asyncio.run(graph.ainvoke(state_in, config, context=context))
        else:
            state = graph.invoke(state_in, config, context=context)
        ids = [m.id for m in state["messages"]]
        this_turn = state["messages"][ids.index(message.id) :]
        results += [json.loads(str(m.content)) for m in this_turn if isinstance(m, ToolMessage)]
    return results


@pytest.mark.usefixtures("server_log")
def test_per_turn_graph(pooled_database: str, caplog: pytest.LogCaptureFixture) -> None:
    settings = KiokuSettings(database_url=pooled_database, sweep_interval_minutes=0)
    with KiokuStore.open(settings) as store:
        results = _graph_turns(store, TURNS)
        assert [r["status"] for r in results] == ["memory_saved_successfully"] * TURNS
        stm = store.short_term_memory()
        assert stm is not None
    assert_quiet(caplog.text)


def _large_scopes(store: KiokuStore) -> None:
    """Alice's and the Tea House's memories beyond their blocks' budgets, the server's
    beyond a thousand: a build ranks both, and would send the larger ranking ahead."""
    with store.accounts() as accounts:
        accounts.upsert_server("guild-1", "Tea House", self_teaching_enabled=True)
        lineage = accounts.ensure_persona("guild-1", "Kioku").lineage_id
    owners = [{"scope": "server", "server_id": "guild-1"}] * 1_100 + [
        {"scope": "personal", "user_id": "user-1"}
    ] * 300
    texts = [f"note {i}: the tea house keeps blend {i} in jar {i % 37}" for i in range(1_400)]
    vectors = store.embedder.embeddings.embed_documents(texts)
    with store.transaction() as session:
        session.execute(insert(User).values(id="user-1", display_name="Alice"))
        session.execute(
            insert(Memory),
            [
                {**owner, "persona_lineage_id": lineage, "content": text, "embedding": vector}
                for owner, text, vector in zip(owners, texts, vectors, strict=True)
            ],
        )


def test_setup_through_a_pool_of_one_says_how_to_set_up(
    fresh_database: str, pooler_of_one: Pooler
) -> None:
    """Setup needs two server connections at once (docs/deployment.md): with one, it
    fails with what to do, once the pooler gives up on its wait."""
    through = pooler_of_one.url(str(make_url(fresh_database).database))
    settings = KiokuSettings(database_url=through, sweep_interval_minutes=0)
    with KiokuStore.open(settings) as store, pytest.raises(DatabaseUnavailableError) as raised:
        store.setup()
    message = str(raised.value)
    assert "default_pool_size" in message and "kioku setup" in message
    assert "\n" not in message


def test_turns_through_a_pool_of_one_server_connection(
    fresh_database: str, pooler_of_one: Pooler, caplog: pytest.LogCaptureFixture
) -> None:
    """Set up directly (as docs/deployment.md says for a pool of one), turns over large
    scopes go through: no connection holds the server session while waiting for another
    (a ranking sent ahead would, so none is sent behind a pooler)."""
    settings = KiokuSettings(
        database_url=fresh_database,
        sweep_interval_minutes=0,
        max_server_memories=5_000,
        max_personal_memories=5_000,
    )
    with KiokuStore.open(settings) as store:
        store.setup()
        _large_scopes(store)
    through = pooler_of_one.url(str(make_url(fresh_database).database))
    with KiokuStore.open(settings.model_copy(update={"database_url": through})) as store:
        results = _graph_turns(store, 3)
    assert [r["status"] for r in results] == ["memory_saved_successfully"] * 3
    assert_quiet(caplog.text)
    assert "query_wait_timeout" not in pooler_of_one.log()


async def _mcp_exercise(url: str, errlog: Any) -> list[dict[str, Any]]:
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "kioku.cli",
            "mcp",
            "--server-id",
            "team-1",
            "--user-id",
            "u-42",
            "--user-name",
            "Alice",
            "--persona",
            "Kioku",
        ],
        env=process_env(url),
    )
    payloads = []
    async with (
        stdio_client(params, errlog=errlog) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        for fact in FACTS[:TURNS]:
            memory = {"memory_type": "semantic", "memory_content": f"Alice {fact}"}
            result = await session.call_tool("create_memory", memory)
            payloads.append(json.loads(result.content[0].text))
        found = await session.call_tool("search_long_term_memory", {"query": " ".join(FACTS)})
        payloads.append(json.loads(found.content[0].text))
    return payloads


@pytest.mark.usefixtures("server_log")
def test_mcp_server_over_stdio(pooled_database: str) -> None:
    with tempfile.TemporaryFile("w+") as errlog:
        payloads = asyncio.run(_mcp_exercise(pooled_database, errlog))
        errlog.seek(0)
        assert_quiet(errlog.read())
    *saved, found = payloads
    assert {p["status"] for p in saved} == {"memory_saved_successfully"}, saved
    assert found["status"] == "memories_found", found


@pytest.mark.usefixtures("server_log")
def test_kioku_sweep(pooled_database: str, database_url: str) -> None:
    env = process_env(pooled_database)
    for _ in range(2):
        swept = _run("-m", "kioku.cli", "sweep", env=env)
        assert swept.returncode == 0, swept.stderr
        assert "Another process" not in swept.stdout, swept.stdout
        assert_quiet(swept.stderr)
    direct = _direct(database_url, pooled_database)
    assert _advisory_locks(direct) == 0
    direct.dispose()


def _server_sessions(url: str) -> Iterator[psycopg.Connection[Any]]:
    """Both server sessions of the pool, each held by a client in an open transaction."""
    plain = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    clients = [psycopg.connect(plain) for _ in range(2)]
    try:
        pids = {client.execute("SELECT pg_backend_pid()").fetchone() for client in clients}
        assert len(pids) == 2  # the transactions hold both
        yield from clients
    finally:
        for client in clients:
            client.close()


def _what_waited(pooler: Pooler, database_url: str) -> str:
    """PgBouncer's log and the server's sessions: what a failed wait for a server met."""
    direct = make_engine(database_url, statement_timeout_ms=0)
    with direct.connect() as connection:
        sessions = connection.execute(
            text(
                "SELECT datname, usename, state, now() - xact_start, left(query, 120) "
                "FROM pg_stat_activity WHERE backend_type = 'client backend'"
            )
        ).all()
    direct.dispose()
    listed = "\n".join(map(str, sessions))
    return f"server sessions:\n{listed}\npgbouncer log (tail):\n{pooler.log()[-6000:]}"


def test_no_session_state_is_left_on_the_servers_sessions(
    pooled_database: str, pooler: Pooler, database_url: str
) -> None:
    """After a graph's turns, searches and setup, every server session is as it started."""
    settings = KiokuSettings(database_url=pooled_database, sweep_interval_minutes=0)
    with KiokuStore.open(settings) as store:
        try:
            store.setup()
            _graph_turns(store, TURNS)
        except Exception as exc:  # a rare query_wait_timeout here: keep what explains it
            raise AssertionError(_what_waited(pooler, database_url)) from exc
    for session in _server_sessions(pooled_database):
        state = session.execute(
            "SELECT current_setting('statement_timeout'), "
            "current_setting('hnsw.iterative_scan', true), "
            "(SELECT count(*) FROM pg_prepared_statements), "
            "(SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
            "AND pid = pg_backend_pid())"
        ).fetchone()
        assert state is not None
        assert state[0] == "0" and state[1] in (None, "", "off"), state
        assert state[2:] == (0, 0), state


def test_the_engine_connects_without_startup_options_and_prepares_nothing(
    pooled_database: str, pooler: Pooler
) -> None:
    engine = make_engine(pooled_database)
    with engine.connect() as connection:
        driver = connection.connection.driver_connection
        assert isinstance(driver, psycopg.Connection)
        assert driver.prepare_threshold is None
        assert connection.info.get(HNSW_SETTINGS_APPLIED) is False
        assert not reaches_server(connection.info)  # so no ranking is sent ahead on it
        for _ in range(8):
            connection.execute(text("SELECT count(*) FROM memories WHERE id = :id"), {"id": 1})
        prepared = connection.execute(text("SELECT count(*) FROM pg_prepared_statements"))
        assert prepared.scalar_one() == 0
    engine.dispose()
    assert "unsupported startup parameter" in pooler.log()  # what the fallback answered


def _deployment_sql() -> str:
    deployment = (Path(__file__).parents[1] / "docs" / "deployment.md").read_text()
    blocks = [
        block
        for block in re.findall(r"```sql\n(.*?)```", deployment, re.DOTALL)
        if "ALTER ROLE" in block
    ]
    assert len(blocks) == 1, "docs/deployment.md shows one block of role settings"
    return str(blocks[0])


def test_the_readme_role_settings_reach_connections_through_the_pooler(
    pooled_empty_database: str, database_url: str
) -> None:
    """docs/deployment.md's role settings, as written (for this test's database and role)."""
    pooled_database = pooled_empty_database  # no server session has started there yet
    database = make_url(pooled_database).database
    role = make_url(database_url).username or "postgres"
    sql = _deployment_sql().replace("ROLE kioku", f"ROLE {role}")
    sql = sql.replace("DATABASE kioku", f"DATABASE {database}")
    direct = _direct(database_url, pooled_database)
    with direct.begin() as connection:
        for statement in filter(str.strip, sql.split(";")):
            connection.execute(text(statement))
    direct.dispose()
    engine = make_engine(pooled_database)
    with engine.connect() as connection:
        assert connection.info.get(HNSW_SETTINGS_APPLIED) is True
        shown = connection.execute(
            text("SELECT current_setting('statement_timeout'), current_setting('TimeZone')")
        ).one()
    engine.dispose()
    assert tuple(shown) == ("10s", "UTC")
