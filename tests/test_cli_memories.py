"""``kioku memories …``: the operator's view, as lines or JSON."""

from __future__ import annotations

import json

import pytest

from kioku import KiokuStore, create_long_term_memory_tool
from kioku.cli import main
from tests.helpers import make_world, run_tool


def test_list_show_and_search(
    store: KiokuStore,
    database_url: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("KIOKU_DATABASE_URL", database_url)
    monkeypatch.setenv("KIOKU_EMBEDDINGS", "hashing")

    def _run(*argv: str) -> int:
        return main(["memories", *argv])

    world = make_world(store)
    create = create_long_term_memory_tool(store)
    args = {"memory_content": "{user} likes jasmine tea", "memory_scope": "target_user"}
    saved = run_tool(create, {**args, "target_user": "Alice"}, world.context()).result
    memory_id = saved["memory_id"]

    assert _run("list", "--user-id", "u-alice", "--json") == 0
    [listed] = json.loads(capsys.readouterr().out)
    assert listed["id"] == memory_id and listed["content"] == "{user} likes jasmine tea"

    assert _run("show", str(memory_id)) == 0
    shown = capsys.readouterr().out
    assert f"ID:{memory_id} [personal u-alice" in shown and "create by u-alice" in shown

    lineage = str(world.persona.lineage_id)
    assert _run("search", "tea", "--user-id", "u-alice", "--lineage", lineage) == 0
    assert f"ID:{memory_id} " in capsys.readouterr().out

    assert _run("show", "999999") == 1
    assert _run("search", "tea") == 2  # which scope: one of --server-id, --user-id


def test_the_command_prints_json_alone(store: KiokuStore, database_url: str) -> None:
    """``kioku memories list --json`` through the console script: stdout is the JSON."""
    import os
    import subprocess
    import sys

    world = make_world(store)
    create = create_long_term_memory_tool(store)
    args = {"memory_content": "The shop opens at nine", "memory_scope": "server_wide"}
    assert run_tool(create, args, world.context()).result["status"] == "memory_saved_successfully"
    environment = {k: v for k, v in os.environ.items() if not k.startswith("KIOKU_")}
    environment |= {"KIOKU_DATABASE_URL": database_url, "KIOKU_EMBEDDINGS": "hashing"}
    command = [sys.executable, "-m", "kioku.cli", "memories", "list", "--server-id", "srv-a"]
    listed = subprocess.run(
        [*command, "--json"], capture_output=True, text=True, env=environment, timeout=120
    )
    assert listed.returncode == 0, listed.stderr
    assert [m["content"] for m in json.loads(listed.stdout)] == ["The shop opens at nine"]
    missing = [sys.executable, "-m", "kioku.cli", "memories", "show", "999999"]
    shown = subprocess.run(missing, capture_output=True, text=True, env=environment, timeout=120)
    assert shown.returncode == 1
