"""State of the per-turn graph."""

from __future__ import annotations

from typing import Annotated

from langchain_core.messages import AnyMessage
from langgraph.channels import UntrackedValue
from typing_extensions import TypedDict

from kioku._state import TurnState


class BuiltContextKeys(TypedDict, total=False):
    """What the context build produced this turn (graph and middleware state alike)."""

    kioku_memory_context: Annotated[list[AnyMessage], UntrackedValue(list)]
    """The memory blocks placed before the dialogue this turn (not part of ``messages``).

    Never checkpointed: rendered memories must not outlive a deletion or an erasure in
    the conversation's saved history (the next turn builds them afresh)."""
    kioku_tail_directive: Annotated[AnyMessage | None, UntrackedValue(object)]
    """A directive inserted before the latest user/assistant pair when prompting (never
    checkpointed, like the memory blocks)."""
    kioku_context_tokens: Annotated[dict[str, int], UntrackedValue(dict)]
    """Token count per context block, as built this turn (never checkpointed, like the
    blocks it counts: each turn's differs, and it would be a checkpointer row a turn)."""
    kioku_search_offered: bool
    """Memories overflowed their budget this turn, so the search tool is offered."""


class TurnGraphState(TurnState, BuiltContextKeys, total=False):
    """Messages, the per-turn memory flags, and what the context build produced."""
