"""LangGraph graphs built on kioku: the per-turn memory graph."""

from graphs.state import TurnGraphState
from graphs.turn import build_graph

__all__ = ["TurnGraphState", "build_graph"]
