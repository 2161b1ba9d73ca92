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
        payload = json.dumps(_completion(message)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

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
