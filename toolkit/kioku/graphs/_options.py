"""The options of a memory turn: one definition for ``build_graph`` and the middleware.

Both take them as keyword arguments (``build_graph(model, store, max_tool_rounds=2)``,
``KiokuMemoryMiddleware(store, max_tool_rounds=2)``); :func:`checked_options` checks them
and :meth:`kioku.graphs._steps.TurnSteps.assemble` fills in the defaults, so the two
cannot drift apart.
"""

from __future__ import annotations

from typing import TypedDict, cast

from kioku._context_build.build import ContextBuilder
from kioku._context_build.render import ContextBudgets
from kioku._context_build.tokens import TokenCounter
from kioku._errors import ConfigurationError
from kioku._intent import IntentGate
from kioku._stm.store import ShortTermMemory


class TurnOptions(TypedDict, total=False):
    """Keyword options of :func:`kioku.build_graph` and :class:`kioku.KiokuMemoryMiddleware`.

    Every option may be left out for its default (``None`` where its type allows it).
    """

    stm: ShortTermMemory | None
    """Short-term memory; the store's own (``store.short_term_memory()``) by default, or,
    for ``build_graph`` given a checkpointer, one kept beside that checkpointer."""
    max_tool_rounds: int
    """Rounds of memory tools allowed per turn (3)."""
    intent_gate: IntentGate | None
    """The long-term-memory intent detector (:class:`kioku.IntentGate`)."""
    budgets: ContextBudgets | None
    """Token budgets per memory block (:class:`kioku.ContextBudgets`)."""
    counter: TokenCounter | None
    """Token counter (tiktoken cl100k by default)."""
    no_stm_providers: frozenset[str]
    """Providers whose models cannot use the short-term-memory tool (``{"novelai"}``)."""
    max_thread_messages: int | None
    """Messages a conversation thread keeps after each turn's capture (whole turns, the
    latest always); ``KIOKU_THREAD_MAX_MESSAGES`` by default."""
    context_builder: ContextBuilder | None
    """The builder that renders each turn's context, instead of one made from ``stm``,
    ``counter``, ``budgets`` and ``no_stm_providers``."""


OPTION_NAMES = tuple(TurnOptions.__annotations__)


def checked_options(options: TurnOptions) -> TurnOptions:
    """``options`` without those given as ``None`` (they take their defaults).

    Raises:
        ConfigurationError: an unknown option, or a number out of range.
    """
    unknown = sorted(set(options) - set(OPTION_NAMES))
    if unknown:
        raise ConfigurationError(
            f"unknown memory option {unknown[0]!r}; the options are: {', '.join(OPTION_NAMES)}"
        )
    given = cast("TurnOptions", {k: v for k, v in options.items() if v is not None})
    rounds, kept = given.get("max_tool_rounds"), given.get("max_thread_messages")
    if rounds is not None and rounds < 0:
        raise ConfigurationError("max_tool_rounds must be 0 or more")
    if kept is not None and kept < 1:
        raise ConfigurationError("max_thread_messages must be at least 1")
    return given
