"""The README's quickstart runs as written."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest

from kioku import KiokuStore

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
    assert quickstart_output.startswith("Noted: jasmine tea. {")
    assert "'total':" in quickstart_output
    rest = out.getvalue()[len(quickstart_output) :]
    assert json.loads(rest.splitlines()[0])["status"] == "memory_updated_successfully"
    assert "Alice loves jasmine tea" in rest and "Shall we brew oolong?" not in rest
    assert "'total':" in out.getvalue()
    opened = namespace["store"]
    assert isinstance(opened, KiokuStore)
    opened.close()
