"""`kioku mcp` over stdio and streamable HTTP with the official SDK client, and through
langchain-mcp-adapters into a LangGraph tool node."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from toolkit import KiokuStore

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


def _env(database_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env["KIOKU_DATABASE_URL"] = database_url
    return env


def _text(result: Any) -> dict[str, Any]:
    return dict(json.loads(result.content[0].text))


async def _exercise(session: ClientSession) -> None:
    await session.initialize()
    names = [tool.name for tool in (await session.list_tools()).tools]
    assert names == [
        "create_memory",
        "search_long_term_memory",
        "get_memory",
        "create_long_term_memory",
        "update_long_term_memory",
        "update_short_term_memory",
    ]
    created = _text(
        await session.call_tool(
            "create_memory",
            {
                "type": "procedural",
                "content": "Brew sencha at 70C for one minute",
                "metadata": {"steps": ["heat water to 70C", "steep 60s"]},
                "embedding": [0.0],
            },
        )
    )
    assert created["status"] == "memory_saved_successfully" and created["embedding_ignored"]
    memory_id = created["memory_id"]
    found = _text(
        await session.call_tool("search_long_term_memory", {"query": "how to brew sencha"})
    )
    assert found["status"] == "memories_found" and found["memories"][0].startswith(
        f"ID:{memory_id} "
    )
    assert found["records"][0]["memory_type"] == "procedural"
    got = _text(await session.call_tool("get_memory", {"memory_id": f"ID:{memory_id}"}))
    assert (
        got["status"] == "memory_found"
        and got["record"]["attributes"]["steps"][0] == "heat water to 70C"
    )
    updated = _text(
        await session.call_tool(
            "update_long_term_memory",
            {"memory_id": memory_id, "memory_content": "Brew sencha at 75C"},
        )
    )
    assert updated["status"] == "memory_updated_successfully"
    personal = _text(
        await session.call_tool(
            "create_long_term_memory",
            {
                "memory_content": "{user} prefers sencha",
                "memory_scope": "target_user",
                "target_user": "Alice",
            },
        )
    )
    assert personal["status"] == "memory_saved_successfully"
    bad = _text(await session.call_tool("create_memory", {"type": "dream", "content": 5}))
    assert bad["status"] == "memory_save_failed_invalid_args"
    # The model cannot pick another scope: extra arguments are refused.
    sneaky = _text(
        await session.call_tool(
            "create_memory", {"type": "semantic", "content": "x", "server_id": "other"}
        )
    )
    assert sneaky["status"] == "memory_save_failed_invalid_args"
    summary = _text(
        await session.call_tool("update_short_term_memory", {"summary": "Talking about sencha."})
    )
    assert summary["status"] == "short_term_memory_updated_successfully"
    deleted = _text(
        await session.call_tool(
            "update_long_term_memory", {"memory_id": memory_id, "memory_content": ""}
        )
    )
    assert deleted["status"] == "memory_deleted_successfully"
    assert (
        _text(await session.call_tool("get_memory", {"memory_id": memory_id}))["status"]
        == "memory_not_found"
    )


def test_stdio(store: KiokuStore, database_url: str) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "toolkit.cli", "mcp", *SCOPE], env=_env(database_url)
    )

    async def run() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await _exercise(session)

    asyncio.run(run())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_streamable_http(store: KiokuStore, database_url: str, tmp_path: Path) -> None:
    port = _free_port()
    log = (tmp_path / "mcp.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "toolkit.cli", "mcp", "--http", "--port", str(port), *SCOPE],
        env=_env(database_url),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    pytest.fail(
                        "kioku mcp --http did not start: " + (tmp_path / "mcp.log").read_text()
                    )
                time.sleep(0.3)

        async def run() -> None:
            async with (
                streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write, _),
                ClientSession(read, write) as session,
            ):
                await _exercise(session)

        asyncio.run(run())
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_langchain_mcp_adapters_load_the_tools_into_a_langgraph_tool_node(
    store: KiokuStore, database_url: str
) -> None:
    from langchain_mcp_adapters.client import MultiServerMCPClient

    from toolkit import TurnContext
    from toolkit.tools.invoke import arun_tool_call

    client = MultiServerMCPClient(
        {
            "kioku": {
                "transport": "stdio",
                "command": sys.executable,
                "args": ["-m", "toolkit.cli", "mcp", *SCOPE],
                "env": _env(database_url),
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
