"""Every Python snippet of the README and docs/ runs on its own, twice in a row on the same data."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kioku import KiokuStore

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SNIPPETS = [
    snippet
    for page in PAGES
    for snippet in re.findall(r"```python\n(.*?)```", page.read_text(), re.S)
]
"""The README's first (the Quickstart's comes first of all), then each page's of docs/."""


def _run(snippet: str, database_url: str) -> str:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("KIOKU_")}
    environment["KIOKU_DATABASE_URL"] = database_url
    environment["KIOKU_EMBEDDINGS"] = "hashing"  # the tests' embedder, whatever is installed
    result = subprocess.run(
        [sys.executable, "-c", snippet],
        capture_output=True,
        text=True,
        env=environment,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_the_readme_has_snippets() -> None:
    assert len(SNIPPETS) >= 4


@pytest.mark.parametrize("number", range(len(SNIPPETS)), ids=lambda n: f"snippet{n + 1}")
def test_a_snippet_runs_twice_on_the_same_data(
    number: int, store: KiokuStore, database_url: str
) -> None:
    outputs = [_run(SNIPPETS[number], database_url) for _ in range(2)]
    assert outputs[0] == outputs[1] or number > 0 or outputs[0].startswith("Noted")
    assert all("Traceback" not in out for out in outputs)


def test_the_quickstart_saves_and_shows_a_memory(store: KiokuStore, database_url: str) -> None:
    quickstart = SNIPPETS[0]
    assert "KiokuMemoryMiddleware" in quickstart and "create_agent" in quickstart
    first = _run(quickstart, database_url)
    assert first.startswith("Noted: jasmine tea. {") and "'total':" in first
    with store.transaction() as session:
        from sqlalchemy import text

        contents = session.scalars(text("SELECT content FROM memories")).all()
    assert contents == ["{user} likes jasmine tea"]


def test_the_pieces_update_what_they_saved(store: KiokuStore, database_url: str) -> None:
    [tools] = [s for s in SNIPPETS if "run_tool_call" in s and "consolidate" not in s]
    for _ in range(2):
        out = _run(tools, database_url)
        assert "alice drinks oolong" in out and '"memory_deleted_successfully"' in out
    [builder] = [s for s in SNIPPETS if "ContextBuilder" in s]
    out = _run(builder, database_url)
    assert "oolong or sencha?" in out and "'total':" in out


def test_the_readme_fits_a_newcomer() -> None:
    """At most 30 KB, contents first, the two commands on the first screen, links that work."""
    readme = PAGES[0].read_text()
    assert len(readme.encode()) <= 30_000
    first_screen = "\n".join(readme.splitlines()[:60])
    assert "## Contents" in first_screen and "kioku demo" in first_screen
    assert "python -m pytest" in first_screen
    for page in PAGES:
        for target in re.findall(r"\]\(((?:\.\./)?[\w./-]+\.md)(?:#[\w-]*)?\)", page.read_text()):
            assert (page.parent / target).is_file(), (page.name, target)
