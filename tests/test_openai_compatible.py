"""`kioku chat`'s model path: ChatOpenAI against an OpenAI-compatible server on loopback."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest
from langchain_core.messages import HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from kioku import KiokuStore
from kioku._models import openai_model_from_env
from kioku.graphs import build_graph
from tests.helpers import make_world


def _completion(message: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": "fake-model",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def _send(handler: BaseHTTPRequestHandler, payload: bytes, kind: str = "application/json") -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", kind)
    handler.send_header("Content-Length", str(len(payload)))
    handler.end_headers()
    handler.wfile.write(payload)


class FakeOpenAI(BaseHTTPRequestHandler):
    requests: list[dict[str, Any]] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeOpenAI.requests.append(body)
        if len(FakeOpenAI.requests) == 1:
            arguments = {
                "memory_content": "{user} likes hojicha",
                "memory_scope": "target_user",
                "target_user": "Alice",
            }
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {
                            "name": "create_long_term_memory",
                            "arguments": json.dumps(arguments),
                        },
                    }
                ],
            }
        else:
            message = {"role": "assistant", "content": "Saved: you like hojicha."}
        _send(self, json.dumps(_completion(message)).encode())

    def log_message(self, *args: Any) -> None:
        return


@pytest.fixture
def fake_openai() -> Iterator[str]:
    FakeOpenAI.requests = []
    server = HTTPServer(("127.0.0.1", 0), FakeOpenAI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def test_chat_openai_through_the_graph(
    store: KiokuStore, fake_openai: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai)
    monkeypatch.setenv("KIOKU_OPENAI_MODEL", "fake-model")
    model = openai_model_from_env()
    assert model is not None
    world = make_world(store)
    graph = build_graph(model, store, checkpointer=InMemorySaver())
    state = graph.invoke(
        {"messages": [HumanMessage("Remember I like hojicha", name="Alice")]},
        {"configurable": {"thread_id": "t"}},
        context=world.context(),
    )
    [tool_message] = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert json.loads(str(tool_message.content))["status"] == "memory_saved_successfully"
    assert state["messages"][-1].content == "Saved: you like hojicha."
    first = FakeOpenAI.requests[0]
    assert first["model"] == "fake-model"
    offered = [tool["function"]["name"] for tool in first["tools"]]
    assert offered == [  # intent: no STM tool
        "create_long_term_memory",
        "update_long_term_memory",
        "create_memory",
    ]
    assert "runtime" not in json.dumps(first["tools"])


class HtmlPage(BaseHTTPRequestHandler):
    """A web server at a wrong OPENAI_BASE_URL: 200 with a page, not a completion."""

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        self.rfile.read(int(self.headers["Content-Length"]))
        _send(self, b"<html>not json</html>", "text/html")

    def log_message(self, *args: Any) -> None:
        return


class FakeEmbeddings(BaseHTTPRequestHandler):
    inputs: list[Any] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeEmbeddings.inputs.extend(body["input"])
        data = [
            {"object": "embedding", "index": i, "embedding": [0.5] * 1536}
            for i in range(len(body["input"]))
        ]
        body_out = {"object": "list", "data": data, "model": body["model"], "usage": {}}
        _send(self, json.dumps(body_out).encode())

    def log_message(self, *args: Any) -> None:
        return


def _serve(handler: type[BaseHTTPRequestHandler]) -> tuple[HTTPServer, str]:
    server = HTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


def test_consolidate_against_an_endpoint_answering_html_is_one_line(
    store: KiokuStore, database_url: str
) -> None:
    from tests.test_consolidate import server_memory
    from tests.test_studio_and_cli import _kioku, _one_line_failure

    world = make_world(store)
    server_memory(world, "The tea club meets on Mondays")
    server_memory(world, "The tea club moved its meetings to Fridays")
    server, url = _serve(HtmlPage)
    try:
        failed = _kioku(
            "consolidate",
            "--server",
            "srv-a",
            KIOKU_DATABASE_URL=database_url,
            OPENAI_API_KEY="sk-test-not-a-key",
            OPENAI_BASE_URL=url,
        )
    finally:
        server.shutdown()
    assert "the chat model failed" in _one_line_failure(failed)


def test_openai_embeddings_send_text_and_need_no_download(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kioku import KiokuSettings
    from kioku._embeddings import embedder_from_settings

    FakeEmbeddings.inputs = []
    server, url = _serve(FakeEmbeddings)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "/nonexistent-kioku-test")  # no cached encoding
    try:
        spec = embedder_from_settings(KiokuSettings(embeddings="openai"))
        vectors = spec.embeddings.embed_documents(["Alice likes hojicha"])
    finally:
        server.shutdown()
    assert len(vectors[0]) == 1536
    assert FakeEmbeddings.inputs == ["Alice likes hojicha"]


class ChatAndEmbeddings(BaseHTTPRequestHandler):
    """An OpenAI-compatible server: 1536-dimensional embeddings and a one-line answer."""

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path.endswith("/embeddings"):
            data = [
                {"object": "embedding", "index": i, "embedding": [0.5] * 1536}
                for i in range(len(body["input"]))
            ]
            answer = {"object": "list", "data": data, "model": body["model"], "usage": {}}
        else:
            answer = _completion({"role": "assistant", "content": "Hello again."})
        _send(self, json.dumps(answer).encode())

    def log_message(self, *args: Any) -> None:
        return


def test_demo_then_chat_as_the_readme_says(fresh_database: str) -> None:
    """`kioku demo`, then `kioku chat` with a key: one line naming the flag, which works."""
    from tests.test_studio_and_cli import _kioku, _one_line_failure

    database = {"KIOKU_DATABASE_URL": fresh_database, "KIOKU_EMBEDDINGS": "auto"}
    demo = _kioku("demo", **database)
    assert demo.returncode == 0, demo.stderr
    server, url = _serve(ChatAndEmbeddings)
    key = {"OPENAI_API_KEY": "sk-test-not-a-key", "OPENAI_BASE_URL": url}
    try:
        refused = _kioku("chat", stdin="/quit\n", **database, **key)
        chatted = _kioku("chat", "--reembed", stdin="hello\n/quit\n", **database, **key)
    finally:
        server.shutdown()
    assert "Run `kioku chat --reembed`" in _one_line_failure(refused)
    assert chatted.returncode == 0, chatted.stdout + chatted.stderr
    assert "with openai:text-embedding-3-small" in chatted.stdout
    assert "Hello again." in chatted.stdout
