"""The README's quickstart runs as written."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest

from toolkit import KiokuStore

README = Path(__file__).resolve().parent.parent / "README.md"


def test_quickstart_runs(
    store: KiokuStore, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = README.read_text()
    [snippet] = re.findall(r"## Quickstart\n\n```python\n(.*?)```", text, re.S)
    later = re.findall(r"```python\n(.*?)```", text.split("## Quickstart", 1)[1], re.S)[1:]
    monkeypatch.setenv("KIOKU_DATABASE_URL", database_url)
    out = io.StringIO()
    namespace: dict[str, object] = {}
    with contextlib.redirect_stdout(out):
        exec(compile(snippet, "README.md", "exec"), namespace)
        quickstart_output = out.getvalue()
        for block in later:
            exec(compile(block, "README.md", "exec"), namespace)
    printed = quickstart_output.splitlines()
    assert json.loads(printed[0])["status"] == "memory_saved_successfully"
    assert "kioku.memory_notice" in printed[1]
    assert "jasmine tea" in out.getvalue() and "Shall we brew oolong?" not in out.getvalue()
    assert "'total':" in out.getvalue()
    opened = namespace["store"]
    assert isinstance(opened, KiokuStore)
    opened.close()
