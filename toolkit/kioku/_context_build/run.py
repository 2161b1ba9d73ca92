"""One context build: what its stages share, and each stage as a method of its own.

:class:`~kioku._context_build.build.ContextBuilder` makes a :class:`BuildRun` per turn and
asks it for the :class:`~kioku._context_build.items.BuiltContext`. The run reads the turn
state once (settings, scope versions, recallable short-term memory; with the rankings, made
on what :mod:`~kioku._context_build.assumed` may assume), loads the memory windows and the
query's vector once for both memory blocks, and renders the stages in SPEC order; a stage
that fails is logged and contributes nothing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date
from functools import cached_property, partial
from typing import TYPE_CHECKING

from langchain_core.messages import BaseMessage
from sqlalchemy.orm import Session

from kioku._context import TurnContext
from kioku._context_build import loader
from kioku._context_build.assumed import assumed_state, same_basis
from kioku._context_build.items import DIALOGUE, SYSTEM_PROMPT, BuiltContext, ContextItem, total
from kioku._context_build.render import Names, Rendered
from kioku._context_build.render_memories import (
    merge_lines,
    personal_memories_omitted,
    personal_memories_stage,
    personal_memory_lines,
    server_memories_omitted,
    server_memories_stage,
    server_memory_lines,
    visible_participants,
)
from kioku._context_build.render_stm import other_channels_stage, same_channel_stage
from kioku._context_build.stages import MemoryStage, MemoryStages
from kioku._context_build.tokens import MemoCounter
from kioku._context_build.turn import TurnFacts, insert_tail_directive, latest_user_text
from kioku._db.driver import SentAhead, Steps, run_steps
from kioku._domain.records import MemoryRecord
from kioku._domain.settings import ServerSettings
from kioku._domain.visibility import Visibility
from kioku._reach import Reach, reach_of
from kioku._recorded_embedder import again_by_text, noted, query_embedding, vectors_usable
from kioku._stm.availability import stm_tool_refusal
from kioku._stm.store import ShortTermMemory

if TYPE_CHECKING:
    from kioku._context_build.build import ContextBuilder

logger = logging.getLogger(__name__)

SETTINGS_UNREAD = ServerSettings(personal_memories_enabled=False)
"""What a build assumes of settings it could not read: it fails closed, showing no personal
memories; the other-channels stage, which needs the private channels, contributes nothing."""


@dataclass
class BuildRun:
    """One build of one turn's context (see the module docstring)."""

    builder: ContextBuilder
    session: Session
    context: TurnContext
    dialogue: Sequence[BaseMessage]
    facts: TurnFacts
    names: Names
    failed: list[str] = field(default_factory=list)
    """Stages that failed (logged, contributing nothing)."""
    retrieval: list[str] = field(default_factory=list)
    """Memory blocks whose memories overflowed (ranked by the message, if there is one)."""
    state: loader.TurnState | None = None
    """The turn state, once read (``None``: unread, and the stages fail closed)."""

    # what the stages share --------------------------------------------------------------

    def guarded(self, stage: str, run: Callable[[], Rendered]) -> Rendered:
        """``run``'s block; a failure is logged and the stage contributes nothing."""
        try:
            return run()
        except Exception:
            logger.exception("kioku: context stage %s failed; it contributes nothing", stage)
            self.failed.append(stage)
            self.session.rollback()  # the next stage starts from a clean transaction
            return Rendered()

    @property
    def settings(self) -> ServerSettings:
        """The server's settings, or :data:`SETTINGS_UNREAD` when they could not be read."""
        return self.state.settings if self.state is not None else SETTINGS_UNREAD

    @cached_property
    def counter(self) -> MemoCounter:
        """The builder's token counter, remembering the texts of this build."""
        return MemoCounter(self.builder.counter)

    @cached_property
    def query(self) -> str:
        """The latest user message: what overflowing blocks are ranked by."""
        return latest_user_text(self.dialogue)

    @property
    def search(self) -> bool:
        """Whether a block over budget may name the search tool: the turn offers tools."""
        return self.context.has_tools

    @cached_property
    def today(self) -> date:
        """The build's day (UTC), part of the key its memory lines are kept under."""
        return self.facts.now.astimezone(UTC).date()

    @cached_property
    def reach(self) -> Reach:
        """Whose memories this turn may show (:mod:`kioku._reach`)."""
        return reach_of(
            self.context, personal_memories_enabled=self.settings.personal_memories_enabled
        )

    @cached_property
    def memories(self) -> loader.LoadedMemories:
        """The memory windows of both blocks (loaded once per build)."""
        return loader.load_memories(self.session, self.builder.deps, self.reach, self.state)

    @cached_property
    def query_vector(self) -> list[float] | None:
        """The message embedded once per build: both blocks rank by it."""
        return query_embedding(self.builder.deps, self.query)

    def ranking(self, need: loader.RankingNeed) -> Steps[loader.Ranked]:
        """``need``'s ranking, as statements for the build's session."""
        deps = self.builder.deps
        vector = self.query_vector if vectors_usable(deps) else None
        return loader.ranking_steps(self.session, deps, need, self.query, vector, self.facts.now)

    def ranking_again(self, attempt: Callable[[], loader.Ranked]) -> loader.Ranked:
        """``attempt``, and once more by text when its vector met a column of another size.

        ``kioku reembed`` switched to an embedder of another dimension; that is noted.
        """
        return again_by_text(self.builder.deps, attempt, self.session.rollback)

    def ahead(self, need: loader.RankingNeed) -> SentAhead[loader.Ranked] | None:
        """``need``'s ranking sent now on a connection of its own (:func:`loader.send_ahead`)."""
        deps = self.builder.deps
        vector = self.query_vector if vectors_usable(deps) else None
        return loader.send_ahead(deps, self.session, need, self.query, vector, self.facts.now)

    # the stages ---------------------------------------------------------------------------

    def read_state(self) -> Rendered:
        """The settings stage: the turn state in one statement (registry rows too)."""
        try:
            run_steps(self.session, self.noted_state())
        except Exception:
            if self.builder.stm is None:
                raise
            # The registry rows are the other-channels stage's: it reads them itself.
            logger.warning("kioku: reading the turn state with other channels failed")
            self.session.rollback()
            run_steps(self.session, self.noted_state(recent=False))
        return Rendered()

    def noted_state(self, *, recent: bool = True) -> Steps[loader.TurnState]:
        """The turn state's statement (with ``recent``, registry rows); the build's from then.

        Noted (a worker that only reads learns of ``kioku reembed``); the next build assumes it.
        """
        stm = self.builder.stm
        threads = stm.recent_threads(self.context) if stm is not None and recent else None
        read_at = time.monotonic()
        state = yield from loader.turn_state_steps(self.context, threads)
        self.state = state
        noted(self.builder.deps, state.embedder, read_at)
        self.builder.bases.remember(self.context, state)
        return state

    def assumed_memory_blocks(self) -> dict[str, Rendered] | None:
        """The memory blocks, their rankings sent with the turn state: a round trip fewer.

        Made on what :mod:`~kioku._context_build.assumed` may assume, kept only when the
        state read shows just that; otherwise (``None``) the caller makes them again.
        """
        deps = self.builder.deps
        assumed = assumed_state(self.builder.bases, deps, self.context)
        if assumed is None:
            return None
        self.state, failed_before, usable = assumed, len(self.failed), vectors_usable(deps)
        try:
            _, blocks = self.memory_stages.run_assumed(
                self.noted_state(),
                lambda state: same_basis(assumed, state) and vectors_usable(deps) == usable,
            )
        except Exception:
            logger.warning("kioku: the turn state sent with the rankings failed; reading it alone")
            self.session.rollback()
            self.state, blocks = None, None
        if blocks is None:  # nothing made on the assumption is kept, but the message's vector
            kept = vectors_usable(deps) == usable
            for name in ("reach", "memories") if kept else ("reach", "memories", "query_vector"):
                self.__dict__.pop(name, None)
            self.retrieval.clear()
            del self.failed[failed_before:]
        return blocks

    @property
    def memory_stages(self) -> MemoryStages:
        """The memory blocks' stages, in SPEC order, ranking in the build's session."""
        return MemoryStages(
            {"server_memories": self.server_stage, "personal_memories": self.personal_stage},
            self.ranking,
            self.guarded,
            self.session,
            self.ranking_again,
            self.ahead,
        )

    def server_stage(self) -> MemoryStage:
        """Server-wide memories, ranked by the message when they overflow their budget."""
        window, budget = self.memories.server, self.builder.budgets.server_memories
        names, counter, now, context = self.names, self.counter, self.facts.now, self.context
        lines = names.lines_of(
            ("server", self.reach.server_key, self.today),
            window.records,
            lambda: server_memory_lines(window.records, names, counter, now),
        )
        omitted = server_memories_omitted(
            lines, context, names, counter, budget, total=window.total
        )
        if not omitted:
            return server_memories_stage(lines, context, names, counter, budget, total=window.total)
        self.retrieval.append("server_memories")
        if not self.query:  # nothing to rank by: the newest, and the search tool for the rest
            return server_memories_stage(
                lines, context, names, counter, budget, total=window.total, searchable=self.search
            )
        scope = Visibility(self.reach.server_key, self.reach.lineage_id)
        need = loader.RankingNeed(scope, loader.wanted(window.total, omitted), (window,))
        priority, found = yield need
        extra = server_memory_lines(loader.missing_from(window.records, found), names, counter, now)
        return server_memories_stage(
            merge_lines(lines, extra),
            context,
            names,
            counter,
            budget,
            priority=priority,
            total=window.total,
            searchable=self.search,
        )

    def personal_stage(self) -> MemoryStage:
        """The participants' memories, ranked by the message when they overflow."""
        windows, budget = self.memories.personal, self.builder.budgets.personal_memories
        names, counter, now = self.names, self.counter, self.facts.now
        participants = visible_participants(self.context)
        records = {user: window.records for user, window in windows.items()}
        total = sum(window.total for window in windows.values())
        lines = merge_lines(
            *(
                names.lines_of(
                    ("personal", person.user_id, self.today),
                    records.get(person.user_id, ()),
                    partial(personal_memory_lines, (person,), records, names, counter, now),
                )
                for person in participants
            )
        )
        omitted = personal_memories_omitted(participants, lines, counter, budget, total=total)
        if not omitted:
            return personal_memories_stage(participants, lines, counter, budget, total=total)
        self.retrieval.append("personal_memories")
        if not self.query:
            return personal_memories_stage(
                participants, lines, counter, budget, total=total, searchable=self.search
            )
        scope = Visibility(
            self.reach.server_key, self.reach.lineage_id, tuple(windows), include_server=False
        )
        need = loader.RankingNeed(scope, loader.wanted(total, omitted), tuple(windows.values()))
        priority, hits = yield need
        every = [m for user_records in records.values() for m in user_records]
        extra_by_user: dict[str, list[MemoryRecord]] = {}
        for m in loader.missing_from(every, hits):
            if m.user_id in records:
                extra_by_user.setdefault(m.user_id, []).append(m)
        extra = personal_memory_lines(participants, extra_by_user, names, counter, now)
        return personal_memories_stage(
            participants,
            merge_lines(lines, extra),
            counter,
            budget,
            priority=priority,
            total=total,
            searchable=self.search,
        )

    def other_channels(self, stm: ShortTermMemory) -> Rendered:
        """Short-term memory of the user's other channels this one may recall."""
        if self.state is None:  # the private channels are unknown: fail closed
            raise RuntimeError("the server's settings could not be read")
        entries = loader.load_other_channel_entries(
            self.session, self.builder.deps, stm, self.context, self.settings, self.state
        )
        return other_channels_stage(
            entries,
            self.context,
            self.names,
            self.facts.now,
            self.counter,
            self.builder.budgets.stm_other_channels,
        )

    def same_channel(self, stm: ShortTermMemory) -> Rendered:
        """This channel's summary and, when due, the directive to write one."""
        facts = self.facts
        stm_available = (
            stm_tool_refusal(
                self.context,
                ltm_intent=facts.ltm_intent,
                already_updated=facts.stm_updated,
                no_stm_providers=self.builder.no_stm_providers,
                private_recent=facts.private_recent,
            )
            is None
        )
        return same_channel_stage(
            loader.load_same_channel_entry(self.session, stm, self.context, self.state),
            self.names,
            self.counter,
            self.builder.budgets.stm_same_channel,
            stm_tool_available=stm_available,
            min_messages_for_summary=self.builder.deps.settings.stm_min_messages_for_summary,
        )

    # the whole build ----------------------------------------------------------------------

    def blocks(self) -> list[tuple[str, Rendered]]:
        """Every stage's block, in SPEC order."""
        memory_blocks = self.assumed_memory_blocks()
        if memory_blocks is None:
            if self.state is None:
                self.guarded("settings", self.read_state)
            memory_blocks = self.memory_stages.run()
        blocks = list(memory_blocks.items())
        stm = self.builder.stm
        if stm is not None:
            for name, stage in (
                ("stm_other_channels", self.other_channels),
                ("stm_same_channel", self.same_channel),
            ):
                blocks.append((name, self.guarded(name, partial(stage, stm))))
        return blocks

    def build(self) -> BuiltContext:
        """The turn's context: the system prompt, every block, then the dialogue."""
        items: list[ContextItem] = []
        prompt = self.facts.system_prompt
        if prompt:
            items.append(ContextItem("system", prompt, SYSTEM_PROMPT, self.counter(prompt)))
        omitted: dict[str, int] = {}
        tail: ContextItem | None = None
        shown_memories: list[int] = []
        for name, rendered in self.blocks():
            items.extend(rendered.items)
            shown_memories.extend(rendered.memory_ids)
            if rendered.omitted:
                omitted[name] = rendered.omitted
            tail = rendered.tail_directive or tail
        self.builder.deps.access.record(shown_memories)
        tokens: dict[str, int] = {}
        for item in items:
            tokens[item.tag] = tokens.get(item.tag, 0) + item.tokens
        messages = list(self.dialogue)
        if tail is not None:
            messages = insert_tail_directive(messages, tail.to_message())
            tokens[tail.tag] = tail.tokens
        tokens[DIALOGUE] = sum(self.counter(str(m.content)) for m in self.dialogue)
        tokens["total"] = total(items) + (tail.tokens if tail else 0) + tokens[DIALOGUE]
        return BuiltContext(
            tuple(items),
            tuple(messages),
            tokens,
            omitted,
            tuple(self.failed),
            tail,
            tuple(self.retrieval),
        )
