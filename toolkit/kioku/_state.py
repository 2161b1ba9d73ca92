"""Graph state keys kioku's tools read (the per-turn graph extends this state)."""

from __future__ import annotations

from typing import Annotated

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict


class TurnFlagKeys(TypedDict, total=False):
    """The per-turn memory flags (reset at the start of every turn) that the tools read."""

    kioku_ltm_intent: bool
    """The triggering message asked for long-term memory (SPEC §9)."""
    kioku_stm_updated: bool
    """Short-term memory was updated this turn (SPEC §7 dedup)."""
    kioku_private_recent: bool
    """The dialogue the model sees holds words of a FULL-privacy person, or a reply to them
    (no short-term summary is written: it could retell them)."""


class TurnState(TurnFlagKeys, total=False):
    """Messages plus the per-turn memory flags."""

    messages: Annotated[list[AnyMessage], add_messages]
