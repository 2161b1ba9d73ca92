"""LangGraph Studio entry point (langgraph.json), `kioku chat`, and `langgraph dev`."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from rich.console import Console

from kioku import KiokuStore
from kioku._db.models import Server
from kioku.testing import Script, ScriptedChatModel, call_tool, say
from tests.conftest import server_directory

ROOT = Path(__file__).resolve().parent.parent
STUDIO_CONTEXT: dict[str, Any] = {
    "user_id": "studio-alice",
    "display_name": "Alice",
    "thread_id": "studio-general",
}


def _load_langgraph_json_graph() -> Any:
    config = json.loads((ROOT / "langgraph.json").read_text())
    path, _, attribute = config["graphs"]["kioku_turn"].partition(":")
    spec = importlib.util.spec_from_file_location("kioku_studio_graph", ROOT / path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, attribute)


def test_graph_loads_as_langgraph_json_says_and_runs_a_turn(
    store: KiokuStore, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KIOKU_DATABASE_URL", database_url)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    graph = _load_langgraph_json_graph()
    assert graph.checkpointer is None  # langgraph dev brings its own
    state = graph.invoke({"messages": [HumanMessage("hello studio")]}, context=STUDIO_CONTEXT)
    assert state["messages"][-1].content == "(scripted model) You said: hello studio"
    assert state["kioku_context_tokens"]["dialogue"] > 0


def test_chat_without_a_key_explains(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from kioku.cli import main

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert main(["chat"]) == 2
    assert "OPENAI_API_KEY" in capsys.readouterr().out


def test_mcp_for_another_users_space_is_refused_before_the_database_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from kioku.cli import main

    monkeypatch.delenv("KIOKU_DATABASE_URL", raising=False)
    monkeypatch.setenv("KIOKU_DATA_DIR", str(tmp_path / "data"))
    assert main(["mcp", "--server-id", "user-space:bob", "--user-id", "alice"]) == 2
    assert "give this server another id" in capsys.readouterr().err
    assert not (tmp_path / "data").exists()


def test_chat_session(store: KiokuStore, monkeypatch: pytest.MonkeyPatch) -> None:
    from kioku._chat import run_chat

    script = Script(
        [
            call_tool(
                "create_long_term_memory",
                memory_content="{user} likes green tea",
                memory_scope="target_user",
                target_user="You",
            ),
            say("Got it."),
            say("Hi Mika."),
        ]
    )
    lines = iter(["remember I like green tea", "/user Mika", "hello", "/context", "/quit"])
    monkeypatch.setattr(Console, "input", lambda self, prompt="": next(lines))
    console = Console(record=True, width=120)
    run_chat(store, ScriptedChatModel(script=script), console)
    text = console.export_text()
    assert "memory created: You likes green tea" in text
    assert "Kioku: Got it." in text and "Kioku: Hi Mika." in text
    assert "what the model saw" in text


def test_server_settings_command_shows_and_changes_self_teaching(
    store: KiokuStore, kioku_cli: Callable[..., str]
) -> None:
    def server_settings(*args: str) -> dict[str, Any]:
        return dict(json.loads(kioku_cli("server-settings", "guild-9", *args)))

    assert server_settings() == {
        "server_id": "guild-9",
        "self_teaching_enabled": False,
        "personal_memories_enabled": True,
        "private_channel_ids": [],
        "stm_privacy_bypass": False,
        "max_server_memories": None,
        "max_personal_memories": None,
    }
    with store.accounts() as accounts:  # showing the defaults wrote no row
        assert accounts.session.get(Server, "guild-9") is None
    assert server_settings("--self-teaching", "on")["self_teaching_enabled"] is True
    assert server_settings()["self_teaching_enabled"] is True
    assert server_settings("--self-teaching", "off")["self_teaching_enabled"] is False
    with store.accounts() as accounts:
        assert not accounts.server_settings("guild-9").self_teaching_enabled


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_studio_model_saves_lists_and_forgets_memories_offline(
    store: KiokuStore, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KIOKU_DATABASE_URL", database_url)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    graph = _load_langgraph_json_graph()
    config = {"configurable": {"thread_id": "t1"}}

    def turn(text: str) -> str:
        state = graph.invoke({"messages": [HumanMessage(text)]}, config, context=STUDIO_CONTEXT)
        return str(state["messages"][-1].content)

    assert turn("remember that I like jasmine tea").startswith("Saved as ID:")
    assert turn("Remember the wifi password is kiwi.").startswith("Saved as ID:")
    recalled = turn("What do you remember?")
    assert "Alice likes jasmine tea" in recalled and "wifi password is kiwi" in recalled
    assert turn("forget jasmine tea").endswith("deleted.")
    recalled = turn("what do you remember?")
    assert "jasmine" not in recalled and "kiwi" in recalled


def test_the_context_schema_is_a_form_without_the_notifier(store: KiokuStore) -> None:
    from kioku import AppContext, TurnContext, build_graph

    model = ScriptedChatModel(script=Script())
    turn = build_graph(model, store).get_context_jsonschema()
    assert turn is not None and "notifier" not in turn["properties"]
    assert {"user", "persona", "channel_id"} <= set(turn["properties"])
    app = build_graph(model, store, context_schema=AppContext).get_context_jsonschema()
    assert app is not None and "required" not in app  # every field has a default
    context = AppContext()
    assert context.as_turn_context() is context.as_turn_context()  # one turn_id per turn
    assert isinstance(context.as_turn_context(), TurnContext)


@pytest.mark.slow
@pytest.mark.skipif(
    shutil.which("langgraph", path=str(Path(sys.executable).parent)) is None,
    reason="langgraph-cli[inmem] is not installed",
)
def test_langgraph_dev_serves_the_graph_offline_and_stops_its_database(
    store: KiokuStore, tmp_path: Path
) -> None:
    """Studio's path: no API key, no context, the embedded database; then the server ends.

    ``langgraph dev``'s server re-raises SIGTERM after its graceful shutdown, so the
    process dies without ``atexit`` (as its reloading worker does on Ctrl-C); the embedded
    server must stop all the same.
    """
    from langgraph_sdk import get_sync_client

    port = _free_port()
    with server_directory() as data_dir:
        env = {k: v for k, v in os.environ.items() if not k.startswith("KIOKU_")}
        env["KIOKU_EMBEDDINGS"] = "hashing"
        env.update(
            KIOKU_DATA_DIR=str(data_dir),
            LANGGRAPH_CLI_NO_ANALYTICS="1",
            LANGSMITH_TRACING="false",
            LANGCHAIN_TRACING_V2="false",
            DO_NOT_TRACK="1",
        )
        env.pop("OPENAI_API_KEY", None)
        env.pop("LANGSMITH_API_KEY", None)
        server = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "langgraph"),
                "dev",
                "--no-browser",
                "--no-reload",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--allow-blocking",
            ],
            cwd=ROOT,
            env=env,
            stdout=(tmp_path / "dev.log").open("w"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        pid_file = data_dir / "pgdata" / "postmaster.pid"
        try:
            client = get_sync_client(url=f"http://127.0.0.1:{port}")
            deadline = time.monotonic() + 180  # a first embedded start takes ~15 s, or more
            while True:
                try:
                    assistants = client.assistants.search(graph_id="kioku_turn")
                    break
                except Exception:
                    if time.monotonic() > deadline or server.poll() is not None:
                        pytest.fail(
                            "langgraph dev did not start:\n"
                            + (tmp_path / "dev.log").read_text()[-3000:]
                        )
                    time.sleep(1)
            assistant = assistants[0]["assistant_id"]
            schema = client.assistants.get_schemas(assistant)["context_schema"]
            assert schema is not None and "user_id" in schema["properties"]
            thread = client.threads.create()

            def turn(text: str) -> str:
                result = client.runs.wait(
                    thread["thread_id"],
                    assistant,
                    input={"messages": [{"type": "human", "content": text}]},
                )
                assert isinstance(result, dict)
                return str(result["messages"][-1]["content"])

            assert turn("hi from the sdk") == "(scripted model) You said: hi from the sdk"
            assert turn("remember that I like jasmine tea").startswith("Saved as ID:")
            assert "You likes jasmine tea" in turn("what do you remember?")
            assert turn("forget jasmine tea").endswith("deleted.")
            assert turn("what do you remember?") == "I don't remember anything yet."
            assert pid_file.exists()
        finally:
            server.terminate()
            server.wait(timeout=60)
        deadline = time.monotonic() + 120
        while pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not pid_file.exists(), "the embedded server outlived langgraph dev"


def test_every_command_and_flag_has_help() -> None:
    import argparse

    from kioku.cli import build_parser

    parser = build_parser()
    [commands] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert {c.dest for c in commands._choices_actions} == set(commands.choices)
    assert all(c.help for c in commands._choices_actions)
    for name, command in commands.choices.items():
        for action in command._actions:
            if not isinstance(action, argparse._HelpAction):
                assert action.help, f"kioku {name} {action.option_strings or action.dest}"


def _kioku(*args: str, stdin: str = "", **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("KIOKU_", "OPENAI_"))}
    environment["KIOKU_EMBEDDINGS"] = "hashing"
    environment.update(env)
    return subprocess.run(
        [sys.executable, "-m", "kioku.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=environment,
        timeout=300,
    )


def _one_line_failure(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result.stdout + result.stderr
    text = (result.stdout + result.stderr).strip()
    assert "Traceback" not in text
    last = text.splitlines()[-1]  # after the chat prompt, when there is one
    assert text.count("kioku:") == 1 and "kioku: " in last, text
    return last


def test_openai_embeddings_without_a_key_is_one_line(database_url: str) -> None:
    failed = _kioku("setup", KIOKU_DATABASE_URL=database_url, KIOKU_EMBEDDINGS="openai")
    assert "OPENAI_API_KEY" in _one_line_failure(failed)


def test_an_unreachable_model_endpoint_is_one_line(store: KiokuStore, database_url: str) -> None:
    with socket.socket() as unused:  # a local port nobody listens on
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    failed = _kioku(
        "chat",
        stdin="hello\n",
        KIOKU_DATABASE_URL=database_url,
        OPENAI_API_KEY="sk-test-not-a-key",
        OPENAI_BASE_URL=f"http://127.0.0.1:{port}/v1",
    )
    assert f"127.0.0.1:{port}" in _one_line_failure(failed)


def test_app_context_threads_keep_their_own_short_term_memory(store: KiokuStore) -> None:
    from kioku import AppContext, build_graph

    script = Script(
        [
            call_tool("update_short_term_memory", summary="Planning the garden party."),
            say("ok"),
            say("hello"),
        ]
    )
    graph = build_graph(
        ScriptedChatModel(script=script),
        store,
        checkpointer=store.checkpointer(),
        context_schema=AppContext,
    )
    for thread, text in (("thread-a", "let's plan the party"), ("thread-b", "hi")):
        graph.invoke(
            {"messages": [HumanMessage(text)]},
            {"configurable": {"thread_id": thread}},
            context=AppContext(),
        )
    same_thread_summary = [
        m.text
        for m in script.prompts[-1]
        if m.additional_kwargs.get("kioku_tag") == "stm_same_channel"
    ]
    assert same_thread_summary == []  # thread B has no summary of its own yet


def test_kioku_bench_finds_the_benchmarks_of_the_clone_it_runs_in(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from kioku.cli import clone_on_path

    clone = Path(__file__).resolve().parents[1]
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(clone))])
    assert not clone_on_path(tmp_path)  # not a clone: the path is left alone
    assert clone_on_path(clone) and sys.path[0] == str(clone)
    assert clone_on_path(clone) and sys.path.count(str(clone)) == 1
