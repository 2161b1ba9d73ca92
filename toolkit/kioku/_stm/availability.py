"""When the short-term-memory tool is offered (SPEC §7): pure rules."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import HumanMessage

from kioku._context import NO_STM_PROVIDERS, PrivacyLevel, TurnContext

LTM_INTENT_KEY = "kioku_ltm_intent"
"""Graph-state key: the triggering message asked for long-term memory."""
STM_UPDATED_KEY = "kioku_stm_updated"
"""Graph-state key: short-term memory was already updated this turn."""
PRIVATE_RECENT_KEY = "kioku_private_recent"
"""Graph-state key: the dialogue the model sees holds words of a FULL-privacy person."""


def stm_tool_refusal(
    context: TurnContext,
    *,
    ltm_intent: bool,
    already_updated: bool,
    no_stm_providers: frozenset[str] = NO_STM_PROVIDERS,
    private_recent: bool = False,
) -> str | None:
    """Why the STM tool is not available this turn, or ``None`` when it is.

    A summary could retell anything in the dialogue, so it is not written on a
    FULL-privacy person's turn nor while their words are in the dialogue the model sees
    (``private_recent``).
    """
    if not context.has_tools:
        return "Tools are disabled for this turn."
    if private_recent or context.user.privacy == PrivacyLevel.FULL:
        return (
            "Someone in this conversation keeps their words out of memory, so short-term "
            "memory is not updated now."
        )
    if context.provider.lower() in no_stm_providers:
        return f"Short-term memory is not available with the {context.provider} provider."
    if ltm_intent:
        return (
            "The user asked you to remember something long-term; use create_long_term_memory "
            "instead of short-term memory."
        )
    if already_updated:
        return "Short-term memory was already updated this turn."
    return None


def turn_flags(state: object) -> tuple[bool, bool]:
    """``(ltm_intent, already_updated)`` read from graph state (missing keys are ``False``)."""
    if not isinstance(state, Mapping):
        return False, False
    values: Mapping[str, Any] = state
    return bool(values.get(LTM_INTENT_KEY)), bool(values.get(STM_UPDATED_KEY))


def private_recent(state: object) -> bool:
    """Whether graph ``state`` says the dialogue holds a FULL person's words."""
    return isinstance(state, Mapping) and bool(state.get(PRIVATE_RECENT_KEY))


def summary_claim_key(turn_id: str, state: object) -> str:
    """The key of a turn's one summary write: the context's turn and its latest user message.

    An application may pass one context to every turn of a conversation (its ``turn_id``
    then never changes); the latest human message of the graph state (ids are given by
    LangGraph's ``add_messages``) tells its turns apart, while the parallel calls of one
    turn share it.
    """
    messages = state.get("messages") if isinstance(state, Mapping) else None
    if isinstance(messages, Sequence):
        for message in reversed(messages):
            if isinstance(message, HumanMessage):
                return f"{turn_id}:{message.id or ''}"
    return turn_id
