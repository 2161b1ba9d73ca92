"""The steps of a memory turn, shared by the per-turn graph and the agent middleware.

Each step reads plain inputs (messages, flags, the ``TurnContext``) and returns a state
update; :mod:`kioku.graphs._turn` runs them as graph nodes and
:mod:`kioku.graphs._middleware` inside ``create_agent``'s model step and its
``after_agent`` hook, so both behave alike.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple, Unpack

import psycopg
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    ToolCall,
    ToolMessage,
)
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from sqlalchemy.exc import SQLAlchemyError

from kioku._authorship import is_user_message, owner_of, stamp_turn_input
from kioku._context import NO_STM_PROVIDERS, SENT_AT, TurnContext, sent_at_of
from kioku._context_build.build import ContextBuilder
from kioku._context_build.render import ContextBudgets
from kioku._context_build.tokens import TiktokenCounter
from kioku._context_build.turn import insert_tail_directive
from kioku._db.errors import describe
from kioku._domain.statuses import StmStatus
from kioku._intent import IntentGate
from kioku._stm.availability import stm_tool_refusal
from kioku._stm.model import StmMessage
from kioku._stm.store import ShortTermMemory
from kioku._store import KiokuStore
from kioku._tools.catalog import LONG_TERM_WRITES, SEARCH_LTM, TOOL_NAMES, UPDATE_STM
from kioku.graphs._options import TurnOptions, checked_options
from kioku.graphs._repair import with_answered_calls
from kioku.graphs._trim import trim_removals

ROUND_LIMIT = "tool_round_limit_reached"

logger = logging.getLogger("kioku.graph")


def message_text(message: BaseMessage) -> str:
    """The text of a message, whatever its content blocks."""
    return message.text if hasattr(message, "text") else str(message.content)


def latest_human_text(messages: Sequence[BaseMessage]) -> str:
    """The text of the latest human message (``""`` if there is none)."""
    for message in reversed(messages):
        if is_user_message(message):
            return message_text(message)
    return ""


def since_latest_human(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The messages after the latest user message: this turn's model and tool traffic.

    A summary standing for earlier history (``SummarizationMiddleware``) is no user
    message: when it replaced this turn's start, the turn is what follows it.
    """
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], HumanMessage):
            return list(messages[index + 1 :])
    return list(messages)


def tool_rounds(messages: Sequence[BaseMessage]) -> int:
    """Model calls this turn that called memory tools (each one a tool round).

    Calls of an agent's own tools do not count: the limit is on kioku's tools.
    """
    return sum(
        1
        for m in since_latest_human(messages)
        if isinstance(m, AIMessage) and any(c["name"] in TOOL_NAMES for c in m.tool_calls)
    )


def tool_status(message: ToolMessage) -> str | None:
    """The ``status`` of a kioku tool result (``None`` when it has none)."""
    try:
        payload = json.loads(str(message.content))
    except ValueError:
        return None
    return payload.get("status") if isinstance(payload, dict) else None


def summary_written(results: Sequence[BaseMessage]) -> bool:
    """Whether one of ``results`` is a successful short-term-memory update (SPEC §7 dedup)."""
    return any(
        isinstance(m, ToolMessage) and m.name == UPDATE_STM and tool_status(m) == StmStatus.UPDATED
        for m in results
    )


def round_limit_answer(call: ToolCall) -> ToolMessage:
    """The answer to a tool call made after the turn's last tool round."""
    return ToolMessage(
        content=json.dumps(
            {
                "status": ROUND_LIMIT,
                "reason": "No more tool calls this turn; answer the user directly.",
            }
        ),
        tool_call_id=call["id"] or "",
        name=call["name"],
    )


def dialogue(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """User messages and assistant replies with text (tool traffic and summaries left out)."""
    return [
        m
        for m in messages
        if is_user_message(m)
        or (isinstance(m, AIMessage) and not m.tool_calls and message_text(m).strip())
    ]


def _stm_message(
    message: BaseMessage, context: TurnContext, sent_at: datetime, owner: str | None
) -> StmMessage:
    if isinstance(message, AIMessage):
        return StmMessage("assistant", context.persona.name, message_text(message), sent_at, owner)
    speaker = message.name or context.user.display_name
    return StmMessage("user", speaker, message_text(message), sent_at, owner)


@dataclass(frozen=True)
class TurnFlags:
    """What the tools of one turn may do, from the turn's start and its tool results."""

    ltm_intent: bool = False
    """The user asked for long-term memory (SPEC §9)."""
    stm_updated: bool = False
    """The summary was written this turn (SPEC §7 dedup)."""
    private_recent: bool = False
    """The dialogue holds words of a FULL-privacy person (no summary may retell them)."""
    search_offered: bool = False
    """A memory block overflowed, so the search tool is offered."""

    @classmethod
    def of(cls, state: Mapping[str, Any]) -> TurnFlags:
        """The flags kept in a graph or agent state."""
        return cls(
            ltm_intent=state.get("kioku_ltm_intent", False),
            stm_updated=state.get("kioku_stm_updated", False),
            private_recent=state.get("kioku_private_recent", False),
            search_offered=state.get("kioku_search_offered", False),
        )


class TurnOpening(NamedTuple):
    """What starting a turn changes: the state update, and the thread it leaves."""

    update: dict[str, Any]
    messages: list[BaseMessage]


@dataclass(frozen=True)
class TurnSteps:
    """One implementation of each memory step, around one store's parts."""

    stm: ShortTermMemory
    builder: ContextBuilder
    intent_gate: IntentGate
    system_prompt: str
    max_tool_rounds: int
    no_stm_providers: frozenset[str]
    max_thread_messages: int

    @classmethod
    def assemble(
        cls, store: KiokuStore, system_prompt: str = "", **options: Unpack[TurnOptions]
    ) -> TurnSteps:
        """The steps of ``store`` with ``options`` (:class:`TurnOptions`), defaults filled in.

        Raises:
            ConfigurationError: an unknown option, or one out of range.
        """
        given = checked_options(options)
        stm = given.get("stm") or store.short_term_memory()
        no_stm_providers = given.get("no_stm_providers", NO_STM_PROVIDERS)
        builder = given.get("context_builder") or ContextBuilder(
            store,
            stm,
            counter=given.get("counter") or TiktokenCounter(),
            budgets=given.get("budgets") or ContextBudgets(),
            no_stm_providers=no_stm_providers,
        )
        store.start_sweeper()  # a process that runs turns is long-lived: retention, idle entries
        return cls(
            stm=stm,
            builder=builder,
            intent_gate=given.get("intent_gate") or IntentGate(),
            system_prompt=system_prompt,
            max_tool_rounds=given.get("max_tool_rounds", 3),
            no_stm_providers=no_stm_providers,
            max_thread_messages=given.get("max_thread_messages")
            or store.settings.thread_max_messages,
        )

    def open_turn(self, messages: Sequence[BaseMessage], context: TurnContext) -> TurnOpening:
        """Reset the per-turn flags; detect explicit long-term-memory intent.

        Also stamps this turn's new messages with their author (see
        :mod:`kioku._authorship`) and answers tool calls an interrupted earlier turn left
        without results. The update's ``messages`` (when present) are the changed
        messages, which replace theirs by id (or, after a repair, the whole thread);
        :attr:`TurnOpening.messages` is the thread they leave.
        """
        update: dict[str, Any] = {
            "kioku_ltm_intent": self.intent_gate.detect(latest_human_text(messages)),
            "kioku_stm_updated": False,
        }
        repaired = with_answered_calls(messages)
        if repaired is not None:
            logger.warning("kioku: answering tool calls an interrupted turn left open")
        stamped = stamp_turn_input(repaired or messages, context)
        thread = list(stamped or repaired or messages)
        # The model sees the whole (trimmed) thread, so a summary could retell any of it.
        update["kioku_private_recent"] = any(owner_of(m)[1] for m in dialogue(thread))
        if repaired is not None:
            update["messages"] = [RemoveMessage(id=REMOVE_ALL_MESSAGES), *thread]
        elif stamped is not None:
            # Only the stamped copies: their ids replace the originals through the reducer,
            # and the rest of the thread is not written again (a checkpoint write a turn).
            changed = zip(stamped, messages, strict=True)
            update["messages"] = [copy for copy, was in changed if copy is not was]
        return TurnOpening(update, thread)

    def build_context(
        self, messages: Sequence[BaseMessage], context: TurnContext, flags: TurnFlags
    ) -> dict[str, Any]:
        """Render memories for this turn (stages that fail contribute nothing)."""
        built = self.builder.build(
            context,
            messages,
            system_prompt=self.system_prompt,
            ltm_intent=flags.ltm_intent,
            stm_updated=flags.stm_updated,
            private_recent=flags.private_recent,
        )
        tail = built.tail_directive.to_message() if built.tail_directive else None
        return {
            "kioku_memory_context": [item.to_message() for item in built.items],
            "kioku_tail_directive": tail,
            "kioku_context_tokens": built.tokens,
            "kioku_search_offered": bool(built.retrieval),
        }

    def offered_tools(self, context: TurnContext, flags: TurnFlags, rounds: int) -> frozenset[str]:
        """Names of the memory tools the next model call may use (SPEC §7, §9)."""
        if not context.has_tools or rounds >= self.max_tool_rounds:
            return frozenset()
        names = set(LONG_TERM_WRITES)
        if flags.search_offered:
            names.add(SEARCH_LTM)
        refusal = stm_tool_refusal(
            context,
            ltm_intent=flags.ltm_intent,
            already_updated=flags.stm_updated,
            no_stm_providers=self.no_stm_providers,
            private_recent=flags.private_recent,
        )
        if refusal is None:
            names.add(UPDATE_STM)
        return frozenset(names)

    @staticmethod
    def prompt(state: Mapping[str, Any], messages: Sequence[BaseMessage]) -> list[BaseMessage]:
        """Memory blocks, then ``messages`` with the tail directive inserted."""
        turn: list[BaseMessage] = list(messages)
        tail = state.get("kioku_tail_directive")
        if tail is not None:
            turn = insert_tail_directive(turn, tail)
        return [*state.get("kioku_memory_context", []), *turn]

    def capture(self, messages: Sequence[BaseMessage], context: TurnContext) -> dict[str, Any]:
        """Passive capture of the recent dialogue into short-term memory, then trimming.

        Once captured, the thread keeps only its last ``max_thread_messages`` messages
        (whole turns, the latest always; see :mod:`kioku.graphs._trim`), so checkpoints and
        the next turn's work stay the same size however long the conversation runs. When
        the capture fails nothing is trimmed: the next turn's capture still sees them.
        """
        now = self.stm.clock()
        stamped: list[BaseMessage] = []
        captured: list[StmMessage] = []
        for message in dialogue(messages)[-self.stm.policy.max_messages :]:
            owner, private = owner_of(message)
            if private:  # stamped when its turn ran; ShortTermMemory.capture applies the rest
                continue
            sent_at = sent_at_of(message)
            if sent_at is None:
                sent_at = now
                stamped.append(
                    message.model_copy(
                        update={
                            "additional_kwargs": {
                                **message.additional_kwargs,
                                SENT_AT: sent_at.isoformat(),
                            }
                        }
                    )
                )
            captured.append(_stm_message(message, context, sent_at, owner))
        if captured:
            try:
                self.stm.capture(context, captured)
            except (psycopg.Error, SQLAlchemyError) as exc:
                # Passive capture is best effort: the answer is given, the turn completes.
                logger.error("kioku: short-term memory capture skipped: %s", describe(exc))
                return {"messages": stamped} if stamped else {}
        removals = trim_removals(messages, self.max_thread_messages)
        if removals:
            dropped = {r.id for r in removals}
            stamped = [m for m in stamped if m.id not in dropped]
        update = [*stamped, *removals]
        return {"messages": update} if update else {}
