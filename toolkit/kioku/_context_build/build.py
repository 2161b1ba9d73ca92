"""Assembling the context (SPEC §10): stages in order, each guarded, with token accounting.

:class:`ContextBuilder` holds what outlives a turn (the store, short-term memory, the token
counter and budgets, the names and rendered lines of recent builds); each build is a
:class:`~kioku._context_build.run.BuildRun`, one method per stage.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import ClassVar

from langchain_core.messages import BaseMessage

from kioku._context import NO_STM_PROVIDERS, TurnContext
from kioku._context_build.assumed import TurnBases
from kioku._context_build.items import BuiltContext
from kioku._context_build.render import ContextBudgets, Names
from kioku._context_build.run import BuildRun
from kioku._context_build.tokens import TiktokenCounter, TokenCounter
from kioku._context_build.turn import TurnFacts
from kioku._deps import HasDeps, KiokuDeps
from kioku._stm.model import utc_now
from kioku._stm.store import ShortTermMemory


@dataclass
class ContextBuilder:
    """Builds the model's context for one turn from kioku's memories.

    Loading (database, checkpointer) and rendering (pure stages) are separate; a stage
    whose loading or rendering fails is logged and contributes nothing.
    """

    store: HasDeps
    """A :class:`kioku.KiokuStore` (or its dependencies)."""
    stm: ShortTermMemory | None = None
    """Short-term memory; ``None`` leaves the STM stages out."""
    counter: TokenCounter = field(default_factory=TiktokenCounter)
    budgets: ContextBudgets = field(default_factory=ContextBudgets)
    no_stm_providers: frozenset[str] = NO_STM_PROVIDERS
    _names: dict[tuple[str, tuple[tuple[str, str], ...]], Names] = field(
        default_factory=dict, init=False, repr=False
    )
    """The names of recent builds, reused (with their rendered lines) while they match."""

    bases: TurnBases = field(default_factory=TurnBases, init=False, repr=False)
    """What each server's last build read: the next one ranks on it, checked in its read."""

    MAX_NAMES: ClassVar[int] = 32
    """Participant sets whose names (and rendered lines) are kept; all are dropped beyond."""

    @property
    def deps(self) -> KiokuDeps:
        """What the build reads with: sessions, settings, embedder, caches."""
        return self.store.deps

    def cached_lines(self) -> int:
        """Rendered texts and memory lines kept for later builds (bounded)."""
        return sum(names.cached_texts() for names in list(self._names.values()))

    def _names_for(self, context: TurnContext) -> Names:
        names = Names.of(context)
        key = names.key()
        known = self._names.get(key)
        if known is not None:
            return known
        if len(self._names) >= self.MAX_NAMES:
            self._names.clear()
        self._names[key] = names
        return names

    def build(
        self,
        context: TurnContext,
        dialogue: Sequence[BaseMessage],
        *,
        system_prompt: str = "",
        ltm_intent: bool = False,
        stm_updated: bool = False,
        private_recent: bool = False,
        now: datetime | None = None,
    ) -> BuiltContext:
        """Render every stage for ``context`` in SPEC order, followed by ``dialogue``."""
        facts = TurnFacts(
            system_prompt,
            ltm_intent,
            stm_updated,
            private_recent,
            now or (self.stm.clock() if self.stm is not None else utc_now()),
        )
        with self.deps.reads() as session:
            run = BuildRun(self, session, context, dialogue, facts, self._names_for(context))
            return run.build()
