"""`kioku mcp` over stdio and streamable HTTP with the official SDK client, and through
langchain-mcp-adapters into a LangGraph tool node.

HTTP is closed by default (issue #12): loopback, a bearer token, Host and Origin
allow-lists. ``--read-only`` refuses every write, failures carry ``isError``, and starting
a server writes nothing to the database.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from sqlalchemy import text

from kioku import KiokuStore
from kioku._mcp_server import KiokuMcp, McpScope
from tests.helpers import process_env

SCOPE = [
    "--server-id",
    "mcp-srv",
    "--user-id",
    "mcp-alice",
    "--user-name",
    "Alice",
    "--persona",
    "Kioku",
]
TOKEN = "kioku-test-token-0123456789"
TOOL_NAMES = [
    "create_memory",
    "search_long_term_memory",
    "get_memory",
    "create_long_term_memory",
    "update_long_term_memory",
    "update_short_term_memory",
]
READ_TOOL_NAMES = ["search_long_term_memory", "get_memory"]
"""What a ``--read-only`` server lists: the tools it runs."""
WRITTEN_TABLES = (
    "servers",
    "personas",
    "users",
    "memories",
    "memory_history",
    "stm_threads",
    "checkpoints",
    "checkpoint_blobs",
    "checkpoint_writes",
    "memory_access",
)
LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}


def _servers(store: KiokuStore) -> list[tuple[Any, ...]]:
    with store.engine.connect() as connection:
        return [tuple(row) for row in connection.execute(text("SELECT * FROM servers ORDER BY id"))]


def _snapshot(store: KiokuStore) -> dict[str, Any]:
    """Row counts of every table a tool writes, the servers and the memories' text."""
    with store.engine.connect() as connection:
        counts = {
            table: connection.execute(text(f"SELECT count(*) FROM {table}")).scalar_one()
            for table in WRITTEN_TABLES
        }
        contents = connection.execute(text("SELECT id, content FROM memories ORDER BY id")).all()
    return {"counts": counts, "servers": _servers(store), "memories": [tuple(r) for r in contents]}


async def _call(session: ClientSession, name: str, arguments: dict[str, Any]) -> Any:
    result = await session.call_tool(name, arguments)
    return dict(json.loads(result.content[0].text)), bool(result.isError)


async def _ok(session: ClientSession, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    payload, is_error = await _call(session, name, arguments)
    assert not is_error, payload
    return dict(payload)


async def _failed(session: ClientSession, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    payload, is_error = await _call(session, name, arguments)
    assert is_error, payload
    return dict(payload)


@contextlib.asynccontextmanager
async def _stdio_session(database_url: str, *args: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "kioku.cli", "mcp", *SCOPE, *args],
        env=process_env(database_url),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@contextlib.asynccontextmanager
async def _http_session(url: str, token: str) -> AsyncIterator[ClientSession]:
    async with (
        httpx.AsyncClient(
            headers={"Authorization": f"Bearer {token}"},
            timeout=httpx.Timeout(30, read=300),
            trust_env=False,
        ) as client,
        streamable_http_client(url, http_client=client) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def _exercise(session: ClientSession) -> None:
    names = [tool.name for tool in (await session.list_tools()).tools]
    assert names == TOOL_NAMES
    created = await _ok(
        session,
        "create_memory",
        {
            "type": "procedural",
            "content": "Brew sencha at 70C for one minute",
            "metadata": {"steps": ["heat water to 70C", "steep 60s"]},
            "embedding": [0.0],
        },
    )
    assert created["status"] == "memory_saved_successfully" and created["embedding_ignored"]
    memory_id = created["memory_id"]
    episode = await _ok(
        session,
        "create_memory",
        {
            "type": "episodic",
            "content": "Restarted the build runner",
            "metadata": {
                "action_taken": {"tool": "ssh", "args": ["reboot"]},
                "verification_status": True,
            },
        },
    )
    assert episode["status"] == "memory_saved_successfully", episode
    found = await _ok(session, "search_long_term_memory", {"query": "how to brew sencha"})
    assert found["status"] == "memories_found" and found["memories"][0].startswith(
        f"ID:{memory_id} "
    )
    assert found["records"][0]["memory_type"] == "procedural"
    got = await _ok(session, "get_memory", {"memory_id": f"ID:{memory_id}"})
    assert (
        got["status"] == "memory_found"
        and got["record"]["attributes"]["steps"][0] == "heat water to 70C"
    )
    updated = await _ok(
        session,
        "update_long_term_memory",
        {"memory_id": memory_id, "memory_content": "Brew sencha at 75C"},
    )
    assert updated["status"] == "memory_updated_successfully"
    personal = await _ok(
        session,
        "create_long_term_memory",
        {
            "memory_content": "{user} prefers sencha",
            "memory_scope": "target_user",
            "target_user": "Alice",
        },
    )
    assert personal["status"] == "memory_saved_successfully"
    bad = await _failed(session, "create_memory", {"type": "dream", "content": 5})
    assert bad["status"] == "memory_save_failed_invalid_args" and bad["reason"]
    # The model cannot pick another scope: extra arguments are refused.
    sneaky = await _failed(
        session, "create_memory", {"type": "semantic", "content": "x", "server_id": "other"}
    )
    assert sneaky["status"] == "memory_save_failed_invalid_args"
    summary = await _ok(session, "update_short_term_memory", {"summary": "Talking about sencha."})
    assert summary["status"] == "short_term_memory_updated_successfully"
    deleted = await _ok(
        session, "update_long_term_memory", {"memory_id": memory_id, "memory_content": ""}
    )
    assert deleted["status"] == "memory_deleted_successfully"
    gone = await _failed(session, "get_memory", {"memory_id": memory_id})
    assert gone["status"] == "memory_not_found"
    unknown = await _failed(session, "drop_all_memories", {})
    assert unknown["status"] == "unknown_tool"


def test_stdio(store: KiokuStore, database_url: str) -> None:
    async def run() -> None:
        async with _stdio_session(database_url) as session:
            await _exercise(session)

    asyncio.run(run())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class HttpServer:
    port: int
    printed: str
    """What the server printed by the time it listened (stdout and stderr)."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"


def _wait_until_listening(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                pytest.fail("kioku mcp --http did not start: " + log.read_text())
            time.sleep(0.2)


@contextlib.contextmanager
def _http_server(
    database_url: str, logs: Path, *args: str, token: str | None = None
) -> Iterator[HttpServer]:
    """``kioku mcp --http`` in its own process, once it accepts connections."""
    port = _free_port()
    log = logs / f"mcp-{port}.log"
    settings = {"KIOKU_MCP_TOKEN": token} if token is not None else {}
    with log.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "kioku.cli", "mcp", "--http", "--port", str(port)]
            + [*SCOPE, *args],
            env=process_env(database_url, **settings),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        _wait_until_listening(port, process, log)
        yield HttpServer(port, log.read_text())
    finally:
        process.terminate()
        process.wait(timeout=30)


def _post(
    server: HttpServer,
    *,
    token: str | None = None,
    headers: Mapping[str, str | bytes] | None = None,
    body: Mapping[str, Any] = LIST_TOOLS,
) -> httpx.Response:
    sent: dict[str, str | bytes] = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    with httpx.Client(trust_env=False, timeout=30) as client:
        return client.post(server.url, json=dict(body), headers={**sent, **(headers or {})})


def _rpc_result(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC result of a streamable HTTP response (one SSE message)."""
    assert response.status_code == 200, response.text
    [data] = [line[5:] for line in response.text.splitlines() if line.startswith("data:")]
    return dict(json.loads(data)["result"])


def test_streamable_http(store: KiokuStore, database_url: str, tmp_path: Path) -> None:
    with _http_server(database_url, tmp_path, token=TOKEN) as server:
        assert "bearer token from KIOKU_MCP_TOKEN" in server.printed
        assert TOKEN not in server.printed

        async def run() -> None:
            async with _http_session(server.url, TOKEN) as session:
                await _exercise(session)

        asyncio.run(run())


def test_http_needs_the_token_and_this_machines_host_and_origin(
    store: KiokuStore, database_url: str, tmp_path: Path
) -> None:
    with store.accounts() as accounts:
        accounts.upsert_server("mcp-srv", "Set by an admin", self_teaching_enabled=False)
    servers = _servers(store)
    extra = ("--allow-origin", "https://app.example", "--allow-host", "mcp.example")
    with _http_server(database_url, tmp_path, *extra) as server:
        port = server.port
        assert f"kioku mcp: serving http://127.0.0.1:{port}/mcp" in server.printed
        [token] = re.findall(r"bearer token for this run[^:]*: (\S+)", server.printed)
        assert len(token) >= 32

        missing = _post(server)
        assert missing.status_code == 401
        assert missing.headers["WWW-Authenticate"].startswith("Bearer")
        for wrong in (token[:-1], token + "x", f"{token} {token}", "é" + token[1:]):
            refused = _post(server, headers={"Authorization": f"Bearer {wrong}".encode()})
            assert refused.status_code == 401
            assert refused.headers["WWW-Authenticate"].startswith("Bearer")
        assert _post(server, headers={"Authorization": f"Basic {token}"}).status_code == 401

        listed = _rpc_result(_post(server, token=token))
        assert [tool["name"] for tool in listed["tools"]] == TOOL_NAMES
        call = {"name": "search_long_term_memory", "arguments": {"query": "tea"}}
        searched = _rpc_result(
            _post(server, token=token, body={**LIST_TOOLS, "method": "tools/call", "params": call})
        )
        assert searched["isError"] is False
        assert json.loads(searched["content"][0]["text"])["status"] == "no_memories_found"

        # DNS rebinding: another Host or Origin is refused, token or not.
        for foreign in (
            {"Host": "evil.example"},
            {"Host": f"evil.example:{port}"},
            {"Origin": "http://evil.example"},
            {"Origin": f"http://evil.example:{port}"},
            {"Origin": "null"},
        ):
            response = _post(server, token=token, headers=foreign)
            assert 400 <= response.status_code < 500 and response.status_code != 401, foreign
            assert _post(server, headers=foreign).status_code == 401
        for allowed in (
            {"Host": f"localhost:{port}"},
            {"Host": f"[::1]:{port}"},
            {"Host": "mcp.example"},
            {"Origin": f"http://localhost:{port}"},
            {"Origin": f"http://127.0.0.1:{port}"},
            {"Origin": "https://app.example"},
        ):
            assert _post(server, token=token, headers=allowed).status_code == 200, allowed
    assert _servers(store) == servers  # starting and reading changed no setting


def _write_attempts(memory_id: int) -> list[tuple[str, dict[str, Any], str]]:
    """Every write path, each with the status a read-only server refuses it with."""
    update = "update_long_term_memory"
    return [
        (
            "create_long_term_memory",
            {"memory_content": "{user} likes gyokuro", "memory_scope": "target_user"},
            "memory_save_failed_disabled",
        ),
        ("create_memory", {"type": "semantic", "content": "Matcha"}, "memory_save_failed_disabled"),
        (
            update,
            {"memory_id": memory_id, "memory_content": "Roasted"},
            "memory_update_failed_disabled",
        ),
        (update, {"memory_id": memory_id, "memory_content": ""}, "memory_update_failed_disabled"),
        (
            "update_short_term_memory",
            {"summary": "Overwritten."},
            "short_term_memory_update_refused",
        ),
    ]


async def _refuses_every_write(session: ClientSession, memory_id: int = 1) -> None:
    for name, arguments, status in _write_attempts(memory_id):
        refused = await _failed(session, name, arguments)
        assert refused["status"] == status and "read-only" in refused["reason"], refused


def test_read_only_refuses_every_write_and_writes_nothing(
    store: KiokuStore, database_url: str, tmp_path: Path
) -> None:
    writer = KiokuMcp(
        store,
        McpScope(server_id="mcp-srv", user_id="mcp-alice", user_name="Alice", persona_name="Kioku"),
    )
    created = writer.call("create_memory", {"type": "semantic", "content": "Sencha is steamed"})
    memory_id = created["memory_id"]
    summary = writer.call("update_short_term_memory", {"summary": "Talking about tea."})
    assert summary["status"] == "short_term_memory_updated_successfully"
    before = _snapshot(store)
    assert before["counts"]["memories"] == 1 and before["counts"]["stm_threads"] > 0

    with _http_server(database_url, tmp_path, "--read-only", token=TOKEN) as server:

        async def run() -> None:
            async with _http_session(server.url, TOKEN) as session:
                assert [t.name for t in (await session.list_tools()).tools] == READ_TOOL_NAMES
                await _refuses_every_write(session, memory_id)
                found = await _ok(session, "search_long_term_memory", {"query": "sencha"})
                assert found["memories"][0].startswith(f"ID:{memory_id} ")
                got = await _ok(session, "get_memory", {"memory_id": memory_id})
                assert got["record"]["content"] == "Sencha is steamed"

        asyncio.run(run())
    assert _snapshot(store) == before


def test_read_only_without_a_persona_starts_and_finds_nothing(
    store: KiokuStore, database_url: str
) -> None:
    before = _snapshot(store)

    async def run() -> None:
        async with _stdio_session(database_url, "--read-only") as session:
            assert [t.name for t in (await session.list_tools()).tools] == READ_TOOL_NAMES
            await _refuses_every_write(session)
            nothing = await _ok(session, "search_long_term_memory", {"query": "tea"})
            assert nothing["status"] == "no_memories_found"
            invalid = await _failed(session, "search_long_term_memory", {"query": ""})
            assert invalid["status"] == "search_failed_invalid_args"
            missing = await _failed(session, "get_memory", {"memory_id": 1})
            assert missing["status"] == "memory_not_found"

    asyncio.run(run())
    assert _snapshot(store) == before
    assert before["servers"] == [] and before["counts"]["personas"] == 0


def test_starting_changes_no_server_setting_and_the_setting_decides(
    store: KiokuStore, database_url: str, kioku_cli: Callable[..., str]
) -> None:
    with store.accounts() as accounts:
        accounts.upsert_server("mcp-srv", "Tea Room", self_teaching_enabled=False)
    servers = _servers(store)
    memory = {"type": "semantic", "content": "Hojicha is roasted"}

    async def run() -> None:
        async with _stdio_session(database_url) as session:
            await _ok(session, "search_long_term_memory", {"query": "tea"})
            assert _servers(store) == servers
            refused = await _failed(session, "create_memory", memory)
            assert refused["status"] == "memory_save_failed_disabled"
            assert "Self-teaching is turned off" in refused["reason"]
            assert _servers(store) == servers
            printed = kioku_cli("server-settings", "mcp-srv", "--self-teaching", "on")
            assert json.loads(printed)["self_teaching_enabled"] is True
            saved = await _ok(session, "create_memory", memory)
            assert saved["status"] == "memory_saved_successfully"

    asyncio.run(run())


def test_langchain_mcp_adapters_load_the_tools_into_a_langgraph_tool_node(
    store: KiokuStore, database_url: str
) -> None:
    from langchain_mcp_adapters.client import MultiServerMCPClient

    from kioku import TurnContext
    from kioku._tools.invoke import arun_tool_call

    client = MultiServerMCPClient(
        {
            "kioku": {
                "transport": "stdio",
                "command": sys.executable,
                "args": ["-m", "kioku.cli", "mcp", *SCOPE],
                "env": process_env(database_url),
            }
        }
    )

    async def run() -> dict[str, Any]:
        tools = await client.get_tools()
        assert {t.name for t in tools} >= {"create_memory", "search_long_term_memory"}
        outcome = await arun_tool_call(
            tools,
            "create_memory",
            {"type": "semantic", "content": "Gyokuro is shade-grown"},
            context=None,
        )
        return {"text": str(outcome.message.content)}

    result = asyncio.run(run())
    assert "memory_saved_successfully" in result["text"]
    _ = TurnContext  # the scope came from the server's flags, not from a turn context


def test_mcp_lists_the_langchain_tools_as_they_are(store: KiokuStore) -> None:
    from langchain_core.utils.function_calling import convert_to_openai_tool

    from kioku import memory_tools
    from kioku._mcp_server import KiokuMcp, McpScope

    app = KiokuMcp(store, McpScope())
    listed = {tool.name: tool for tool in app.tools()}
    for tool in memory_tools(store):
        spec = convert_to_openai_tool(tool)["function"]
        assert listed[tool.name].description == spec["description"]
        assert listed[tool.name].inputSchema == spec["parameters"]
    assert set(listed) - {tool.name for tool in memory_tools(store)} == {"get_memory"}


def test_argument_names_agree_across_tools(store: KiokuStore) -> None:
    from langchain_core.utils.function_calling import convert_to_openai_tool

    from kioku import memory_tools

    properties = {
        tool.name: set(convert_to_openai_tool(tool)["function"]["parameters"]["properties"])
        for tool in memory_tools(store)
    }
    assert "memory_type" in properties["create_memory"] & properties["search_long_term_memory"]
    assert "memory_content" in properties["create_memory"] & properties["create_long_term_memory"]
    assert not {"type", "content"} & properties["create_memory"]


def test_a_read_only_instance_does_not_count_what_it_finds(store: KiokuStore) -> None:
    scope = McpScope(server_id="mcp-srv", user_id="mcp-alice", user_name="Alice")
    writer = KiokuMcp(store, scope)
    created = writer.call("create_memory", {"type": "semantic", "content": "Sencha is steamed"})
    reader = KiokuMcp(store, replace(scope, writable=False))
    found = reader.call("search_long_term_memory", {"query": "sencha"})
    assert found["memories"][0].startswith(f"ID:{created['memory_id']} ")
    store.access.flush()
    assert _snapshot(store)["counts"]["memory_access"] == 0
    writer.call("search_long_term_memory", {"query": "sencha"})  # the process still counts
    store.access.flush()
    assert _snapshot(store)["counts"]["memory_access"] == 1


def test_the_server_is_fastmcp_answering_with_kioku_statuses(store: KiokuStore) -> None:
    """FastMCP carries the protocol; the tool list and every answer are kioku's."""
    from mcp.server.fastmcp import FastMCP

    from kioku._mcp_server import build_server

    app = KiokuMcp(store, McpScope(writable=False))
    server = build_server(app)
    assert isinstance(server, FastMCP)

    async def run() -> list[Any]:
        listed = await server.list_tools()
        return [
            [tool.name for tool in listed],
            await server.call_tool("drop_all_memories", {}),
            await server.call_tool("get_memory", {"memory_id": "seven"}),
            await server.call_tool("get_memory", {"memory_id": 1, "server_id": "other"}),
            await server.call_tool("search_long_term_memory", {"query": "tea"}),
        ]

    names, unknown, invalid, extra, found = asyncio.run(run())
    assert names == READ_TOOL_NAMES
    for result, status in (
        (unknown, "unknown_tool"),
        (invalid, "get_failed_invalid_args"),
        (extra, "get_failed_invalid_args"),
    ):
        assert result.isError and json.loads(result.content[0].text)["status"] == status
    assert "unknown argument(s) server_id" in extra.content[0].text
    assert not found.isError
    assert json.loads(found.content[0].text)["status"] == "no_memories_found"
