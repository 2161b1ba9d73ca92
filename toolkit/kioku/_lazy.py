"""Lazy public names for a package (PEP 562): a module is imported on first use."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_exports(
    namespace: dict[str, Any], names: Mapping[str, str]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for a package whose ``names`` live in other modules.

    Args:
        namespace: the package's ``globals()``; a resolved name is cached there.
        names: public name → module that defines it.
    """

    def getattr_(name: str) -> object:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
        value = getattr(import_module(module), name)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted({*namespace, *namespace.get("__all__", ())})

    return getattr_, dir_
