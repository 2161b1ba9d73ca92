"""Assembling the context (SPEC §10): stages in order, each guarded, with token accounting."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import ClassVar

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from sqlalchemy.orm import Session

from kioku._context import NO_STM_PROVIDERS, TurnContext
from kioku._context_build import loader
from kioku._context_build.items import (
    DIALOGUE,
    SYSTEM_PROMPT,
    BuiltContext,
    ContextItem,
    total,
)
from kioku._context_build.render import (
    ContextBudgets,
    Names,
    Rendered,
    merge_lines,
    other_channels_stage,
    personal_memories_omitted,
    personal_memories_stage,
    personal_memory_lines,
    same_channel_stage,
    server_memories_omitted,
    server_memories_stage,
    server_memory_lines,
    visible_participants,
)
from kioku._context_build.stages import MemoryStage, RankingThreads, run_memory_stages
from kioku._context_build.tokens import MemoCounter, TiktokenCounter, TokenCounter
from kioku._core import MEMORY_WINDOW, KiokuCore
from kioku._db.driver import Steps
from kioku._domain.records import MemoryRecord
from kioku._domain.settings import ServerSettings
from kioku._domain.visibility import Visibility
from kioku._reach import reach_of
from kioku._search.planning import HNSW_EF_SEARCH
from kioku._search.rows import CandidateRow
from kioku._stm.availability import stm_tool_refusal
from kioku._stm.model import utc_now
from kioku._stm.store import ShortTermMemory

logger = logging.getLogger(__name__)


def latest_user_text(dialogue: Sequence[BaseMessage]) -> str:
    """Text of the latest user message (the query when memories must be chosen)."""
    for message in reversed(dialogue):
        if isinstance(message, HumanMessage):
            return message.text
    return ""


def insert_tail_directive(
    dialogue: Sequence[BaseMessage], directive: BaseMessage
) -> list[BaseMessage]:
    """Insert ``directive`` just before the latest user/assistant pair of ``dialogue``."""
    messages = list(dialogue)
    position = len(messages)
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], HumanMessage):
            position = index
            if index > 0 and isinstance(messages[index - 1], AIMessage):
                position = index - 1
            break
    messages.insert(position, directive)
    return messages


SETTINGS_UNREAD = ServerSettings(personal_memories_enabled=False)
"""What a build assumes of settings it could not read: it fails closed, showing no personal
memories; the other-channels stage, which needs the private channels, contributes nothing."""


def wanted(total: int, omitted: int) -> int:
    """How many memories to rank: a few more than the block showed, at most the window.

    The few more stop at what one HNSW walk collects (``hnsw.ef_search``): past that, a
    large scope's index search walks again, which cost 1.5 ms of a 15 ms turn at 10,000
    memories per scope, to rank memories the block has no room for.
    """
    shown = max(0, total - omitted)
    return min(total, MEMORY_WINDOW, shown + shown // 4 + 5, max(shown, HNSW_EF_SEARCH))


def missing_from(
    loaded: Sequence[MemoryRecord], found: Sequence[CandidateRow]
) -> list[MemoryRecord]:
    """The retrieved memories that ``loaded`` lacks, as records."""
    have = {m.id for m in loaded}
    return [
        MemoryRecord(
            hit.id,
            hit.scope,
            hit.server_id,
            hit.user_id,
            hit.persona_lineage_id,
            hit.content,
            hit.created_at,
            hit.updated_at,
            hit.event_time,
            hit.happened_at,
            hit.memory_type,
        )
        for hit in found
        if hit.id not in have
    ]


@dataclass
class ContextBuilder:
    """Builds the model's context for one turn from kioku's memories.

    Loading (database, checkpointer) and rendering (pure stages) are separate; a stage
    whose loading or rendering fails is logged and contributes nothing.
    """

    store: KiokuCore
    stm: ShortTermMemory | None = None
    """Short-term memory; ``None`` leaves the STM stages out."""
    counter: TokenCounter = field(default_factory=TiktokenCounter)
    budgets: ContextBudgets = field(default_factory=ContextBudgets)
    no_stm_providers: frozenset[str] = NO_STM_PROVIDERS
    _names: dict[tuple[str, tuple[tuple[str, str], ...]], Names] = field(
        default_factory=dict, init=False, repr=False
    )
    """The names of recent builds, reused (with their rendered lines) while they match."""

    _beside: RankingThreads = field(init=False, repr=False)
    """Runs the rankings set aside (``stages.RANK_BESIDE_FROM``)."""

    MAX_NAMES: ClassVar[int] = 32
    """Participant sets whose names (and rendered lines) are kept; all are dropped beyond."""

    def __post_init__(self) -> None:
        self._beside = RankingThreads(self.store.reads)

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
        with self.store.reads() as session:
            return self._build(
                session,
                context,
                dialogue,
                system_prompt=system_prompt,
                ltm_intent=ltm_intent,
                stm_updated=stm_updated,
                private_recent=private_recent,
                now=now or (self.stm.clock() if self.stm is not None else utc_now()),
            )

    def _build(
        self,
        session: Session,
        context: TurnContext,
        dialogue: Sequence[BaseMessage],
        *,
        system_prompt: str,
        ltm_intent: bool,
        stm_updated: bool,
        private_recent: bool,
        now: datetime,
    ) -> BuiltContext:
        names = self._names_for(context)
        failed: list[str] = []

        def guarded(stage: str, run: Callable[[], Rendered]) -> Rendered:
            try:
                return run()
            except Exception:
                logger.exception("kioku: context stage %s failed; it contributes nothing", stage)
                failed.append(stage)
                session.rollback()  # the next stage starts from a clean transaction
                return Rendered()

        state_box: list[loader.TurnState] = []

        def settings_stage() -> Rendered:
            recent = self.stm.recent_threads(context) if self.stm is not None else None
            try:
                state_box.append(loader.load_turn_state(session, context, recent))
            except Exception:
                if recent is None:
                    raise
                # The registry rows are the other-channels stage's: it reads them itself.
                logger.warning("kioku: reading the turn state with other channels failed")
                session.rollback()
                state_box.append(loader.load_turn_state(session, context))
            return Rendered()

        guarded("settings", settings_stage)
        state = state_box[0] if state_box else None  # the stages read their own on failure
        settings = state.settings if state is not None else SETTINGS_UNREAD
        stm_available = (
            stm_tool_refusal(
                context,
                ltm_intent=ltm_intent,
                already_updated=stm_updated,
                no_stm_providers=self.no_stm_providers,
                private_recent=private_recent,
            )
            is None
        )
        participants = visible_participants(context)
        today = now.astimezone(UTC).date()
        counter, budgets = MemoCounter(self.counter), self.budgets
        query = latest_user_text(dialogue)
        retrieval: list[str] = []

        reach = reach_of(context, personal_memories_enabled=settings.personal_memories_enabled)
        loaded: list[loader.LoadedMemories] = []

        def memories() -> loader.LoadedMemories:
            if not loaded:  # once per build, for both stages
                loaded.append(loader.load_memories(session, self.store, reach, state))
            return loaded[0]

        embedded: list[list[float] | None] = []

        def query_vector() -> list[float] | None:
            if not embedded:  # once per build: both stages rank by the same message
                embedded.append(loader.query_vector(self.store, query))
            return embedded[0]

        def ranking(need: loader.RankingNeed) -> Steps[loader.Ranked]:
            return loader.ranking_steps(session, self.store, need, query, query_vector(), now)

        def server_stage() -> MemoryStage:
            window, budget = memories().server, budgets.server_memories
            lines = names.lines_of(
                ("server", reach.server_key, today),
                window.records,
                lambda: server_memory_lines(window.records, names, counter, now),
            )
            omitted = server_memories_omitted(
                lines, context, names, counter, budget, total=window.total
            )
            if not omitted or not query:
                return server_memories_stage(
                    lines, context, names, counter, budget, total=window.total
                )
            retrieval.append("server_memories")
            scope = Visibility(reach.server_key, reach.lineage_id)
            need = loader.RankingNeed(scope, wanted(window.total, omitted), (window,))
            priority, found = yield need
            extra = server_memory_lines(missing_from(window.records, found), names, counter, now)
            return server_memories_stage(
                merge_lines(lines, extra),
                context,
                names,
                counter,
                budget,
                priority=priority,
                total=window.total,
            )

        def personal_stage() -> MemoryStage:
            windows, budget = memories().personal, budgets.personal_memories
            records = {user: window.records for user, window in windows.items()}
            total = sum(window.total for window in windows.values())
            lines = merge_lines(
                *(
                    names.lines_of(
                        ("personal", person.user_id, today),
                        records.get(person.user_id, ()),
                        partial(personal_memory_lines, (person,), records, names, counter, now),
                    )
                    for person in participants
                )
            )
            omitted = personal_memories_omitted(participants, lines, counter, budget, total=total)
            if not omitted or not query:
                return personal_memories_stage(participants, lines, counter, budget, total=total)
            retrieval.append("personal_memories")
            scope = Visibility(
                reach.server_key, reach.lineage_id, tuple(windows), include_server=False
            )
            need = loader.RankingNeed(scope, wanted(total, omitted), tuple(windows.values()))
            priority, hits = yield need
            every = [m for user_records in records.values() for m in user_records]
            extra_by_user: dict[str, list[MemoryRecord]] = {}
            for m in missing_from(every, hits):
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
            )

        def beside(need: loader.RankingNeed) -> Future[loader.Ranked]:
            vector = query_vector()
            return self._beside.start(
                lambda own: loader.ranking_steps(own, self.store, need, query, vector, now)
            )

        memory_blocks = run_memory_stages(
            {"server_memories": server_stage, "personal_memories": personal_stage},
            ranking,
            guarded,
            session,
            beside,
        )
        stages: list[tuple[str, Callable[[], Rendered]]] = []
        stm = self.stm

        def other_channels(stm: ShortTermMemory) -> Rendered:
            if state is None:  # the private channels are unknown: fail closed
                raise RuntimeError("the server's settings could not be read")
            return other_channels_stage(
                loader.load_other_channel_entries(
                    session, self.store, stm, context, settings, state
                ),
                context,
                names,
                now,
                counter,
                budgets.stm_other_channels,
            )

        if stm is not None:
            stages += [
                ("stm_other_channels", lambda: other_channels(stm)),
                (
                    "stm_same_channel",
                    lambda: same_channel_stage(
                        loader.load_same_channel_entry(session, stm, context, state),
                        names,
                        counter,
                        budgets.stm_same_channel,
                        stm_tool_available=stm_available,
                        min_messages_for_summary=self.store.settings.stm_min_messages_for_summary,
                    ),
                ),
            ]
        items: list[ContextItem] = []
        if system_prompt:
            items.append(
                ContextItem("system", system_prompt, SYSTEM_PROMPT, counter(system_prompt))
            )
        omitted: dict[str, int] = {}
        tail: ContextItem | None = None
        shown_memories: list[int] = []
        blocks = [*memory_blocks.items(), *((name, guarded(name, run)) for name, run in stages)]
        for name, rendered in blocks:
            items.extend(rendered.items)
            shown_memories.extend(rendered.memory_ids)
            if rendered.omitted:
                omitted[name] = rendered.omitted
            tail = rendered.tail_directive or tail
        self.store.access.record(shown_memories)
        tokens: dict[str, int] = {}
        for item in items:
            tokens[item.tag] = tokens.get(item.tag, 0) + item.tokens
        messages = list(dialogue)
        if tail is not None:
            messages = insert_tail_directive(messages, tail.to_message())
            tokens[tail.tag] = tail.tokens
        tokens[DIALOGUE] = sum(counter(str(m.content)) for m in dialogue)
        tokens["total"] = total(items) + (tail.tokens if tail else 0) + tokens[DIALOGUE]
        return BuiltContext(
            tuple(items), tuple(messages), tokens, omitted, tuple(failed), tail, tuple(retrieval)
        )
