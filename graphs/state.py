"""State of the per-turn graph."""

from __future__ import annotations

from langchain_core.messages import AnyMessage

from toolkit.state import TurnState


class TurnGraphState(TurnState, total=False):
    """Messages, the per-turn memory flags, and what the context build produced."""

    kioku_memory_context: list[AnyMessage]
    """The memory blocks placed before the dialogue this turn (not part of ``messages``)."""
    kioku_tail_directive: AnyMessage | None
    """A directive inserted before the latest user/assistant pair when prompting."""
    kioku_context_tokens: dict[str, int]
    """Token count per context block, as built this turn."""
    kioku_tool_rounds: int
    """Tool rounds run this turn."""
    kioku_search_offered: bool
    """Memories overflowed their budget this turn, so the search tool is offered."""
