"""``kioku memories …``: the operator's view, as lines or JSON."""

from __future__ import annotations

import argparse
import json

import pytest
from rich.console import Console

from kioku import KiokuStore, create_long_term_memory_tool
from kioku._cli_memories import add_memories, run_memories
from tests.helpers import make_world, run_tool


def _run(store: KiokuStore, *argv: str) -> int:
    parser = argparse.ArgumentParser(prog="kioku")
    add_memories(parser.add_subparsers(dest="command", required=True))
    return run_memories(store, parser.parse_args(["memories", *argv]), Console())


def test_list_show_and_search(store: KiokuStore, capsys: pytest.CaptureFixture[str]) -> None:
    world = make_world(store)
    create = create_long_term_memory_tool(store)
    args = {"memory_content": "{user} likes jasmine tea", "memory_scope": "target_user"}
    saved = run_tool(create, {**args, "target_user": "Alice"}, world.context()).result
    memory_id = saved["memory_id"]

    assert _run(store, "list", "--user-id", "u-alice", "--json") == 0
    [listed] = json.loads(capsys.readouterr().out)
    assert listed["id"] == memory_id and listed["content"] == "{user} likes jasmine tea"

    assert _run(store, "show", str(memory_id)) == 0
    shown = capsys.readouterr().out
    assert f"ID:{memory_id} [personal u-alice" in shown and "create by u-alice" in shown

    lineage = str(world.persona.lineage_id)
    assert _run(store, "search", "tea", "--user-id", "u-alice", "--lineage", lineage) == 0
    assert f"ID:{memory_id} " in capsys.readouterr().out

    assert _run(store, "show", "999999") == 1
    assert _run(store, "search", "tea") == 2  # which scope: one of --server-id, --user-id
