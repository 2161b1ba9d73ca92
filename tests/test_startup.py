"""Startup stays light: ``import kioku`` and ``kioku --help`` load no heavy library."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import kioku
import kioku.graphs

HEAVY = (
    "langchain_core",
    "langgraph",
    "sqlalchemy",
    "alembic",
    "pydantic",
    "pydantic_settings",
    "psycopg",
    "psycopg_pool",
    "mcp",
    "openai",
    "pgserver",
    "tiktoken",
    "rich",
)


def _heavy_modules_after(code: str) -> list[str]:
    script = textwrap.dedent(
        f"""
        import sys
        {code}
        heavy = {HEAVY!r}
        print(" ".join(sorted({{m.split(".")[0] for m in sys.modules}} & set(heavy))))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    return result.stdout.split()


def test_import_kioku_loads_nothing_heavy() -> None:
    assert _heavy_modules_after("import kioku, kioku.graphs") == []


def test_cli_help_loads_nothing_heavy() -> None:
    code = textwrap.dedent(
        """
        from contextlib import redirect_stdout
        import io
        from kioku.cli import main
        try:
            with redirect_stdout(io.StringIO()):
                main(["mcp", "--help"])
        except SystemExit:
            pass
        """
    ).replace("\n", "\n        ")
    assert _heavy_modules_after(code) == []


@pytest.mark.parametrize("package", [kioku, kioku.graphs], ids=lambda p: p.__name__)
def test_every_exported_name_resolves(package: object) -> None:
    names = package.__all__  # type: ignore[attr-defined]
    assert names and all(getattr(package, name) is not None for name in names)
    assert set(names) <= set(dir(package))
    with pytest.raises(AttributeError):
        package.no_such_name  # type: ignore[attr-defined]  # noqa: B018
