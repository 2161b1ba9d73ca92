"""Module paths are file paths: ``kioku.x.y`` is ``toolkit/kioku/x/y.py``."""

from __future__ import annotations

import importlib
import pkgutil
import tomllib
from pathlib import Path

import kioku

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "toolkit" / "kioku"


def test_the_package_is_the_folder_of_its_name() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert config["package-dir"] == {"": "toolkit"}
    assert [Path(p) for p in kioku.__path__] == [PACKAGE]


def test_every_module_is_imported_from_the_file_its_name_names() -> None:
    """A module added to a folder is importable at once (no install step maps names)."""
    modules = [
        info.name
        for info in pkgutil.walk_packages([str(PACKAGE)], "kioku.")
        if not info.name.startswith("kioku._db.migrations.")
    ]
    assert len(modules) > 50
    for name in modules:
        module = importlib.import_module(name)
        parts = name.split(".")[1:]
        expected = PACKAGE.joinpath(*parts)
        origin = Path(str(module.__file__))
        assert origin in (expected.with_suffix(".py"), expected / "__init__.py"), name


def test_graphs_holds_only_what_langgraph_loads() -> None:
    assert sorted(p.name for p in (ROOT / "graphs").glob("*.py")) == ["studio.py"]


def test_the_distribution_is_not_called_like_the_import() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == "kioku-langgraph"
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")


def test_the_domain_layer_and_the_privacy_rule_need_no_database_library() -> None:
    """``kioku._domain`` (plain data) and ``kioku._reach`` (who may see what) import
    neither SQLAlchemy nor a database driver: pure code builds on them."""
    import subprocess
    import sys

    probe = (
        "import sys, pkgutil, importlib, kioku._domain as d\n"
        "for m in pkgutil.iter_modules(d.__path__):\n"
        "    importlib.import_module('kioku._domain.' + m.name)\n"
        "import kioku._reach\n"
        "print(sorted(n for n in ('sqlalchemy', 'psycopg', 'pgvector') if n in sys.modules))"
    )
    found = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert found.stdout.strip() == "[]"
