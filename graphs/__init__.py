"""LangGraph graphs built on kioku: the per-turn memory graph.

``TurnGraphState`` and ``build_graph`` are resolved lazily (PEP 562), so importing a
``graphs`` submodule does not load the whole graph (and LangGraph) up front.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from graphs.state import TurnGraphState
    from graphs.turn import build_graph

__all__ = ["TurnGraphState", "build_graph"]

_LAZY: dict[str, str] = {
    "TurnGraphState": "graphs.state",
    "build_graph": "graphs.turn",
}


def __getattr__(name: str) -> object:
    """Import a public name's module on first use and cache the name here."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
