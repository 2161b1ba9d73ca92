"""``kioku --help`` and configuration errors answer without loading LangChain or LangGraph.

Each case runs the real command in a fresh interpreter under ``-X importtime`` and reads
which modules it imported; a configuration error is one line, exit status 2, and starts no
database. (How long they take is measured by ``python -m bench.startup``, not asserted.)
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

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
