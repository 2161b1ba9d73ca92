"""LangGraph graphs built on kioku: the per-turn memory graph.

``TurnGraphState``, ``TurnOptions`` and ``build_graph`` are resolved lazily (PEP 562), so
importing a ``kioku.graphs`` submodule does not load the whole graph (and LangGraph) up
front.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kioku._lazy import lazy_exports

if TYPE_CHECKING:
    from kioku.graphs._options import TurnOptions
    from kioku.graphs._state import TurnGraphState
    from kioku.graphs._turn import build_graph

__all__ = ["TurnGraphState", "TurnOptions", "build_graph"]

_LAZY: dict[str, str] = {
    "TurnGraphState": "kioku.graphs._state",
    "TurnOptions": "kioku.graphs._options",
    "build_graph": "kioku.graphs._turn",
}


__getattr__, __dir__ = lazy_exports(globals(), _LAZY)
