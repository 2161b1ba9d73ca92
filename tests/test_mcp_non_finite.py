"""NaN and Infinity in MCP tool arguments get the tool's ``…_invalid_args``, over both transports.

The SDK re-validates each request from a JSON dump that writes NaN as ``null``, which a tool
would take as "use the default"; the requests here are sent as raw JSON text (the SDK's
client would send ``null`` itself) to a real ``kioku mcp`` process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import IO, Any

import httpx
from mcp.types import LATEST_PROTOCOL_VERSION

from kioku import KiokuStore
from kioku._mcp_finite import NON_FINITE, mark_non_finite, non_finite_number
from tests.helpers import process_env
from tests.test_mcp import SCOPE, TOKEN, HttpServer, _http_server, _rpc_result, _snapshot

CASES = [
    (
        '{"name": "create_memory", "arguments": '
        '{"type": "semantic", "content": "Sencha", "importance": NaN}}',
        "memory_save_failed_invalid_args",
        "importance is NaN",
    ),
    (
        '{"name": "create_memory", "arguments": {"type": "semantic", "content": "Sencha", '
        '"metadata": {"steps": ["boil", {"minutes": -Infinity}]}}}',
        "memory_save_failed_invalid_args",
        "metadata.steps[1].minutes is -Infinity",
    ),
    (
        '{"name": "create_long_term_memory", "arguments": '
        '{"memory_content": "{user} likes tea", "importance": Infinity}}',
        "memory_save_failed_invalid_args",
        "importance is Infinity",
    ),
    (
        '{"name": "search_long_term_memory", "arguments": {"query": "tea", "limit": NaN}}',
        "search_failed_invalid_args",
        "limit is NaN",
    ),
    (
        '{"name": "update_long_term_memory", "arguments": '
        '{"memory_id": Infinity, "memory_content": ""}}',
        "memory_update_failed_invalid_args",
        "memory_id is Infinity",
    ),
    (
        '{"name": "get_memory", "arguments": {"memory_id": NaN}}',
        "get_failed_invalid_args",
        "memory_id is NaN",
    ),
    (
        '{"name": "update_short_term_memory", "arguments": {"summary": NaN}}',
        "short_term_memory_update_failed_invalid_args",
        "summary is NaN",
    ),
]
SPOOFED = (
    '{"name": "search_long_term_memory", "arguments": {"query": "tea"}, '
    f'"_meta": {{"{NON_FINITE}": "query is NaN"}}}}'
)
"""A client cannot have a good call refused by sending the server's own note."""


def _request(number: int, params: str) -> str:
    return f'{{"jsonrpc": "2.0", "id": {number}, "method": "tools/call", "params": {params}}}'


def _tool_answer(result: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    return json.loads(result["content"][0]["text"]), bool(result["isError"])


def _check(answers: list[tuple[dict[str, Any], bool]]) -> None:
    for (payload, is_error), (_, status, where) in zip(answers, CASES, strict=False):
        assert is_error and payload["status"] == status, payload
        assert payload["reason"].startswith(where) and "finite" in payload["reason"], payload
    spoofed, is_error = answers[-1]
    assert not is_error and spoofed["status"] == "no_memories_found", spoofed


def _line(stream: IO[str], number: int) -> dict[str, Any]:
    """The JSON-RPC message answering request ``number`` (skipping any other)."""
    while True:
        message = json.loads(stream.readline())
        if message.get("id") == number:
            return dict(message)


def test_stdio_refuses_nan_and_infinity(store: KiokuStore, database_url: str) -> None:
    before = _snapshot(store)
    process = subprocess.Popen(
        [sys.executable, "-m", "kioku.cli", "mcp", *SCOPE],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=process_env(database_url),
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        hello = {"protocolVersion": LATEST_PROTOCOL_VERSION, "capabilities": {}}
        hello["clientInfo"] = {"name": "raw", "version": "0"}
        initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}
        process.stdin.write(json.dumps(initialize) + "\n")
        process.stdin.write('{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        process.stdin.flush()
        assert "result" in _line(process.stdout, 0)
        answers = []
        for number, params in enumerate([*(case[0] for case in CASES), SPOOFED], start=1):
            process.stdin.write(_request(number, params) + "\n")
            process.stdin.flush()
            answers.append(_tool_answer(_line(process.stdout, number)["result"]))
    finally:
        process.stdin.close()
        process.wait(timeout=60)
    _check(answers)
    assert _snapshot(store) == before  # nothing saved with defaults in NaN's place


def _post_raw(server: HttpServer, text: str) -> httpx.Response:
    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "Authorization": f"Bearer {TOKEN}",
    }
    with httpx.Client(trust_env=False, timeout=60) as client:
        return client.post(server.url, content=text.encode(), headers=headers)


def test_http_refuses_nan_and_infinity(
    store: KiokuStore, database_url: str, tmp_path: Path
) -> None:
    before = _snapshot(store)
    with _http_server(database_url, tmp_path, token=TOKEN) as server:
        answers = [
            _tool_answer(_rpc_result(_post_raw(server, _request(number, params))))
            for number, params in enumerate([*(case[0] for case in CASES), SPOOFED], start=1)
        ]
    _check(answers)
    assert _snapshot(store) == before


def test_where_the_first_non_finite_number_is() -> None:
    assert non_finite_number({"a": 1.5, "b": [0, {"c": float("nan")}], "d": float("inf")}) == (
        "b[1].c is NaN"
    )
    assert non_finite_number({"a": [1, "NaN", None, 10**400]}) is None
    deep: Any = float("-inf")
    for _ in range(5_000):  # deeper than Python recurses
        deep = [deep]
    assert non_finite_number({"x": deep}) == "x" + "[0]" * 5_000 + " is -Infinity"
    assert non_finite_number([float("nan")]) is None  # arguments are an object or nothing


def test_only_tool_calls_are_marked_and_a_clients_mark_is_dropped() -> None:
    from mcp.shared.message import SessionMessage
    from mcp.types import JSONRPCMessage

    def marked(text: str) -> Any:
        message = SessionMessage(JSONRPCMessage.model_validate_json(text))
        result = mark_non_finite(message)
        assert isinstance(result, SessionMessage)
        return result.message.root.model_dump(by_alias=True, mode="json")["params"]

    params = marked(_request(1, CASES[0][0]))
    assert params["_meta"] == {NON_FINITE: "importance is NaN"}
    assert params["arguments"]["importance"] is None  # what the SDK would hand on alone
    assert NON_FINITE not in marked(_request(2, SPOOFED))["_meta"]
    other = '{"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {"x": NaN}}'
    assert "_meta" not in marked(other)
