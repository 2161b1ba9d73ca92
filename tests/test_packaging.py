"""The folders ``toolkit/`` and ``graphs/`` install as ``kioku`` and ``kioku.graphs``."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _packages_under(folder: str, name: str) -> set[str]:
    base = ROOT / folder
    return {
        ".".join([name, *init.parent.relative_to(base).parts]) for init in base.rglob("__init__.py")
    }


def test_every_folder_is_an_installed_package() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert config["package-dir"] == {"kioku": "toolkit", "kioku.graphs": "graphs"}
    expected = _packages_under("toolkit", "kioku") | _packages_under("graphs", "kioku.graphs")
    assert set(config["packages"]) == expected


def test_the_distribution_is_not_called_like_the_import() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == "kioku-memory"
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
