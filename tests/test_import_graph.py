"""No import circles in the library: every import, inside functions too, points down."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "toolkit" / "kioku"


def _module_name(path: Path) -> str:
    parts = ["kioku", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, modules: set[str]) -> set[str]:
    """kioku modules ``path`` imports at run time (``TYPE_CHECKING`` blocks left out)."""
    tree = ast.parse(path.read_text())
    checking = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for statement in block.body
        for node in ast.walk(statement)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in checking:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                name = f"{node.module}.{alias.name}"
                found.add(name if name in modules else node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name in modules}


def test_the_library_has_no_import_circle() -> None:
    files = {
        _module_name(path): path
        for path in PACKAGE.rglob("*.py")
        if "migrations" not in path.parts
    }
    modules = set(files)
    graph = {name: _imports(path, modules) - {name} for name, path in files.items()}
    # the package itself only names its public API lazily (kioku/_lazy.py)
    graph["kioku"] = set()
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(name: str) -> None:
        state[name] = 1
        stack.append(name)
        for target in sorted(graph[name]):
            if state.get(target) == 1:
                circle = stack[stack.index(target) :] + [target]
                raise AssertionError("import circle: " + " -> ".join(circle))
            if target not in state:
                visit(target)
        stack.pop()
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name)
