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
    [snippet] = re.findall(r"## Quickstart\n\n```python\n(.*?)```", README.read_text(), re.S)
    monkeypatch.setenv("KIOKU_DATABASE_URL", database_url)
    out = io.StringIO()
    namespace: dict[str, object] = {}
    with contextlib.redirect_stdout(out):
        exec(compile(snippet, "README.md", "exec"), namespace)
    printed = out.getvalue().splitlines()
    assert json.loads(printed[0])["status"] == "memory_saved_successfully"
    assert "kioku.memory_notice" in printed[1]
    opened = namespace["store"]
    assert isinstance(opened, KiokuStore)
    opened.engine.dispose()
