"""``kioku --help``, configuration errors and ``kioku memories`` answer without LangChain.

Each case runs the real command in a fresh interpreter under ``-X importtime`` and reads
which modules it imported; a configuration error is one line, exit status 2, and starts no
database. (How long they take is measured by ``python -m bench.startup``, not asserted.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from kioku import KiokuStore, create_long_term_memory_tool
from tests.helpers import make_world, run_tool

MODEL_LIBRARIES = ("langchain", "langchain_core", "langchain_openai", "langgraph")


@dataclass(frozen=True)
class Run:
    returncode: int
    output: str
    """What the command printed (stdout, then stderr without the import timings)."""
    imported: frozenset[str]
    """Top-level packages it imported."""


def _kioku(tmp_path: Path, *args: str, **env: str) -> Run:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("KIOKU_", "OPENAI_"))}
    environment |= {"KIOKU_DATA_DIR": str(tmp_path / "data"), **env}
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "kioku.cli", *args],
        capture_output=True,
        text=True,
        env=environment,
        stdin=subprocess.DEVNULL,
        timeout=300,
    )
    timings = [line for line in result.stderr.splitlines() if line.startswith("import time:")]
    printed = [line for line in result.stderr.splitlines() if not line.startswith("import time:")]
    imported = {line.rsplit("|", 1)[1].strip().split(".")[0] for line in timings[1:]}
    return Run(result.returncode, result.stdout + "\n".join(printed), frozenset(imported))


def test_help_loads_no_model_library(tmp_path: Path) -> None:
    run = _kioku(tmp_path, "--help")
    assert run.returncode == 0 and "usage: kioku" in run.output
    assert "argparse" in run.imported  # the timings were read
    assert not run.imported & set(MODEL_LIBRARIES), sorted(run.imported & set(MODEL_LIBRARIES))


@pytest.mark.parametrize(
    ("args", "env", "said"),
    [
        (("setup",), {"KIOKU_DATABASE_URL": "not a url"}, "KIOKU_DATABASE_URL is not a database"),
        (("sweep",), {"KIOKU_DATABASE_URL": "mysql://db/kioku"}, "must point at PostgreSQL"),
        (("demo",), {"MAX_SERVER_MEMORIES": "lots"}, "MAX_SERVER_MEMORIES"),
        (("mcp", "--http"), {"KIOKU_MCP_TOKEN": "   "}, "KIOKU_MCP_TOKEN is blank"),
        (("mcp", "--http"), {"KIOKU_MCP_TOKEN": ""}, "KIOKU_MCP_TOKEN is blank"),
        (("mcp",), {"KIOKU_MCP_TOKEN": " padded-but-long-enough "}, "whitespace"),
        (("chat",), {"KIOKU_DATABASE_URL": "sqlite://"}, "must point at PostgreSQL"),
        (("consolidate", "--server", "team", "--save-plan", "p.json", "--apply"), {}, "dry run"),
    ],
    ids=[
        "url",
        "not-postgres",
        "setting",
        "blank-token",
        "empty-token",
        "padded-token",
        "chat",
        "consolidate",
    ],
)
def test_a_configuration_error_is_one_line_before_langchain_and_the_database(
    tmp_path: Path, args: tuple[str, ...], env: dict[str, str], said: str
) -> None:
    run = _kioku(tmp_path, *args, **env)
    assert run.returncode == 2, run.output
    assert "Traceback" not in run.output and said in run.output, run.output
    assert len(run.output.strip().splitlines()) == 1, run.output
    assert not run.imported & set(MODEL_LIBRARIES), sorted(run.imported & set(MODEL_LIBRARIES))
    assert not (tmp_path / "data").exists()  # no embedded database was started


def test_memories_list_and_show_load_no_model_library(
    tmp_path: Path, store: KiokuStore, database_url: str
) -> None:
    """An operator's look at the database imports neither LangChain nor LangGraph."""
    world = make_world(store)
    run_tool(
        create_long_term_memory_tool(store),
        {"memory_content": "The tea club meets on Fridays", "memory_scope": "server_wide"},
        world.context(),
    )
    database = {"KIOKU_DATABASE_URL": database_url}
    listed = _kioku(tmp_path, "memories", "list", "--server-id", "srv-a", "--json", **database)
    assert listed.returncode == 0, listed.output
    [memory] = json.loads(listed.output)
    assert memory["content"] == "The tea club meets on Fridays"
    shown = _kioku(tmp_path, "memories", "show", str(memory["id"]), **database)
    assert shown.returncode == 0 and "create by" in shown.output, shown.output
    for run in (listed, shown):
        assert "sqlalchemy" in run.imported  # the timings were read
        assert not run.imported & set(MODEL_LIBRARIES), sorted(run.imported & set(MODEL_LIBRARIES))


def test_memories_list_before_setup_says_what_to_run(tmp_path: Path, fresh_database: str) -> None:
    run = _kioku(tmp_path, "memories", "list", KIOKU_DATABASE_URL=fresh_database)
    assert run.returncode == 2 and "run `kioku setup` first" in run.output, run.output
    assert len(run.output.strip().splitlines()) == 1, run.output
