"""The notebooks run top to bottom (scripted model, test database); the README matches."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from kioku import KiokuStore

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


@pytest.mark.parametrize("name", ["quickstart.ipynb", "memory_inspection.ipynb"])
def test_notebook_runs(
    name: str, store: KiokuStore, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KIOKU_DATABASE_URL", database_url)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=180,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    )
    client.execute()
    outputs = "\n".join(
        str(output.get("text", "")) + str(output.get("data", {}).get("text/plain", ""))
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
    )
    assert "Traceback" not in outputs
    if name == "quickstart.ipynb":
        assert "Noted: jasmine tea." in outputs and "You like jasmine tea!" in outputs
        assert "memory_deleted_successfully" in outputs
    else:
        assert "create None -> '{user} is reading Dune'" in outputs
        assert "Mika is halfway through Dune." in outputs
        assert "remembers a recent conversation in #books" in outputs


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def test_readme_quickstart_matches_the_notebook() -> None:
    readme = (NOTEBOOKS.parent / "README.md").read_text()
    [graph] = re.findall(r"## Servers, channels.*?```python\n(.*?)```", readme, re.S)
    notebook = nbformat.read(NOTEBOOKS / "quickstart.ipynb", as_version=4)
    code = _lines("\n".join(c.source for c in notebook.cells if c.cell_type == "code"))
    wanted = [line for line in _lines(graph) if line != "store.close()"]  # the notebook goes on
    start = code.index(wanted[0])
    assert code[start : start + len(wanted)] == wanted
