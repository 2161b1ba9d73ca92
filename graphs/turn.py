"""The per-turn memory graph (SPEC §11).

intent gate → context build → generate ⇄ tools → STM-summary dedup → … → capture → end
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

import psycopg
from kioku.authorship import owner_of, stamp_reply, stamp_turn_input
from kioku.context import NO_STM_PROVIDERS, TurnContext
from kioku.context_build.build import ContextBuilder, insert_tail_directive
from kioku.context_build.render import ContextBudgets
from kioku.context_build.tokens import TiktokenCounter, TokenCounter
from kioku.db.errors import describe
from kioku.graphs.repair import with_answered_calls
from kioku.graphs.state import TurnGraphState
from kioku.graphs.trim import trim_removals
from kioku.intent import IntentGate
from kioku.stm.availability import stm_tool_refusal
from kioku.stm.model import StmMessage
from kioku.stm.store import ShortTermMemory
from kioku.store import KiokuStore
from kioku.tools.ltm import long_term_memory_tools
from kioku.tools.search import search_long_term_memory_tool
from kioku.tools.stm import StmStatus, update_short_term_memory_tool
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    ToolMessage,
)
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode
from langgraph.runtime import Runtime
from sqlalchemy.exc import SQLAlchemyError

SENT_AT = "kioku_sent_at"
"""``additional_kwargs`` key holding when a message was sent (ISO 8601)."""
STM_TOOL = "update_short_term_memory"

logger = logging.getLogger("kioku.graph")


def _text(message: BaseMessage) -> str:
    return message.text if hasattr(message, "text") else str(message.content)


def _latest_human_text(messages: Sequence[BaseMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return _text(message)
    return ""


def _turn_tool_messages(messages: Sequence[BaseMessage]) -> list[ToolMessage]:
    """Tool messages answering the latest AI message."""
    found: list[ToolMessage] = []
    for message in reversed(messages):
        if isinstance(message, ToolMessage):
            found.append(message)
        else:
            break
    return found


class TurnGraph:
    """Builds the nodes around one store, model and short-term memory."""

    def __init__(
        self,
        model: BaseChatModel,
        store: KiokuStore,
        stm: ShortTermMemory,
        *,
        system_prompt: str,
        max_tool_rounds: int,
        intent_gate: IntentGate,
        builder: ContextBuilder,
        no_stm_providers: frozenset[str],
        max_thread_messages: int,
    ) -> None:
        """See :func:`build_graph`."""
        self.model = model
        self.store = store
        self.stm = stm
        self.system_prompt = system_prompt
        self.max_tool_rounds = max_tool_rounds
        self.intent_gate = intent_gate
        self.builder = builder
        self.no_stm_providers = no_stm_providers
        self.max_thread_messages = max_thread_messages
        self.ltm_tools = long_term_memory_tools(store)
        self.stm_tool = update_short_term_memory_tool(stm, no_stm_providers=no_stm_providers)
        self.search_tool = search_long_term_memory_tool(store)

    # nodes -------------------------------------------------------------------------------

    def intent_gate_node(
        self, state: TurnGraphState, runtime: Runtime[TurnContext]
    ) -> dict[str, Any]:
        """Reset the per-turn flags; detect explicit long-term-memory intent.

        Also stamps this turn's new messages with their author (see
        :mod:`kioku.authorship`) and answers tool calls an interrupted earlier turn left
        without results.
        """
        messages = state.get("messages", [])
        intent = self.intent_gate.detect(_latest_human_text(messages))
        update: dict[str, Any] = {
            "kioku_ltm_intent": intent,
            "kioku_stm_updated": False,
            "kioku_tool_rounds": 0,
        }
        repaired = with_answered_calls(messages)
        if repaired is not None:
            logger.warning("kioku: answering tool calls an interrupted turn left open")
        stamped = stamp_turn_input(repaired or messages, runtime.context)
        # The model sees the whole (trimmed) thread, so a summary could retell any of it.
        seen = _dialogue(stamped or repaired or messages)
        update["kioku_private_recent"] = any(owner_of(m)[1] for m in seen)
        if repaired is not None:
            update["messages"] = [RemoveMessage(id=REMOVE_ALL_MESSAGES), *(stamped or repaired)]
        elif stamped is not None:
            update["messages"] = stamped  # same ids: the stamped copies replace the originals
        return update

    def context_node(self, state: TurnGraphState, runtime: Runtime[TurnContext]) -> dict[str, Any]:
        """Render memories for this turn (stages that fail contribute nothing)."""
        built = self.builder.build(
            runtime.context,
            state.get("messages", []),
            system_prompt=self.system_prompt,
            ltm_intent=state.get("kioku_ltm_intent", False),
            stm_updated=state.get("kioku_stm_updated", False),
            private_recent=state.get("kioku_private_recent", False),
        )
        tail = built.tail_directive.to_message() if built.tail_directive else None
        return {
            "kioku_memory_context": [item.to_message() for item in built.items],
            "kioku_tail_directive": tail,
            "kioku_context_tokens": built.tokens,
            "kioku_search_offered": bool(built.retrieval),
        }

    def offered_tools(self, state: TurnGraphState, context: TurnContext) -> list[BaseTool]:
        """The tools available for the next model call."""
        if not context.has_tools or state.get("kioku_tool_rounds", 0) >= self.max_tool_rounds:
            return []
        tools: list[BaseTool] = list(self.ltm_tools)
        if state.get("kioku_search_offered", False):
            tools.append(self.search_tool)
        refusal = stm_tool_refusal(
            context,
            ltm_intent=state.get("kioku_ltm_intent", False),
            already_updated=state.get("kioku_stm_updated", False),
            no_stm_providers=self.no_stm_providers,
            private_recent=state.get("kioku_private_recent", False),
        )
        if refusal is None:
            tools.append(self.stm_tool)
        return tools

    def prompt(self, state: TurnGraphState) -> list[BaseMessage]:
        """Memory blocks, then the dialogue with the tail directive inserted."""
        dialogue: list[BaseMessage] = list(state.get("messages", []))
        tail = state.get("kioku_tail_directive")
        if tail is not None:
            dialogue = insert_tail_directive(dialogue, tail)
        return [*state.get("kioku_memory_context", []), *dialogue]

    def generate_node(self, state: TurnGraphState, runtime: Runtime[TurnContext]) -> dict[str, Any]:
        """Call the model with this turn's tools bound."""
        tools = self.offered_tools(state, runtime.context)
        model = self.model.bind_tools(tools) if tools else self.model
        reply = model.invoke(self.prompt(state))
        return {"messages": [stamp_reply(reply, runtime.context)]}

    def dedup_node(self, state: TurnGraphState) -> dict[str, Any]:
        """Set the STM flag after a successful summary write; count the round."""
        update: dict[str, Any] = {"kioku_tool_rounds": state.get("kioku_tool_rounds", 0) + 1}
        for message in _turn_tool_messages(state.get("messages", [])):
            if message.name == STM_TOOL and _status(message) == StmStatus.UPDATED:
                update["kioku_stm_updated"] = True
        return update

    def close_calls_node(self, state: TurnGraphState) -> dict[str, Any]:
        """Answer tool calls made after the round limit, so none is left unanswered."""
        last = state["messages"][-1]
        assert isinstance(last, AIMessage)
        return {
            "messages": [
                ToolMessage(
                    content=json.dumps(
                        {
                            "status": "tool_round_limit_reached",
                            "reason": "No more tool calls this turn; answer the user directly.",
                        }
                    ),
                    tool_call_id=call["id"] or "",
                    name=call["name"],
                )
                for call in last.tool_calls
            ]
        }

    def capture_node(self, state: TurnGraphState, runtime: Runtime[TurnContext]) -> dict[str, Any]:
        """Passive capture of the recent dialogue into short-term memory, then trimming.

        Once captured, the thread keeps only its last ``max_thread_messages`` messages
        (whole turns, the latest always; see :mod:`kioku.graphs.trim`), so checkpoints and the
        next turn's work stay the same size however long the conversation runs. When the
        capture fails nothing is trimmed: the next turn's capture still sees the messages.
        """
        context = runtime.context
        now = self.stm.clock()
        messages = state.get("messages", [])
        stamped: list[BaseMessage] = []
        captured: list[StmMessage] = []
        for message in _dialogue(messages)[-self.stm.policy.max_messages :]:
            owner, private = owner_of(message)
            if private:  # stamped when its turn ran; ShortTermMemory.capture applies the rest
                continue
            sent_at = message.additional_kwargs.get(SENT_AT)
            if sent_at is None:
                sent_at = now.isoformat()
                stamped.append(
                    message.model_copy(
                        update={
                            "additional_kwargs": {**message.additional_kwargs, SENT_AT: sent_at}
                        }
                    )
                )
            captured.append(_stm_message(message, context, datetime.fromisoformat(sent_at), owner))
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

    # routing -----------------------------------------------------------------------------

    def after_generate(self, state: TurnGraphState) -> Literal["tools", "close_calls", "capture"]:
        """Run requested tools, unless the round limit is reached."""
        last = state["messages"][-1]
        if isinstance(last, AIMessage) and last.tool_calls:
            if state.get("kioku_tool_rounds", 0) >= self.max_tool_rounds:
                return "close_calls"
            return "tools"
        return "capture"


def _status(message: ToolMessage) -> str | None:
    try:
        payload = json.loads(str(message.content))
    except ValueError:
        return None
    return payload.get("status") if isinstance(payload, dict) else None


def _dialogue(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """Human messages and assistant replies with text (tool traffic left out)."""
    return [
        m
        for m in messages
        if isinstance(m, HumanMessage)
        or (isinstance(m, AIMessage) and not m.tool_calls and _text(m).strip())
    ]


def _stm_message(
    message: BaseMessage, context: TurnContext, sent_at: datetime, owner: str | None
) -> StmMessage:
    if isinstance(message, AIMessage):
        return StmMessage("assistant", context.persona.name, _text(message), sent_at, owner)
    speaker = message.name or context.user.display_name
    return StmMessage("user", speaker, _text(message), sent_at, owner)


def build_graph(
    model: BaseChatModel,
    store: KiokuStore,
    *,
    checkpointer: BaseCheckpointSaver[Any] | None = None,
    stm: ShortTermMemory | None = None,
    system_prompt: str = "",
    max_tool_rounds: int = 3,
    intent_gate: IntentGate | None = None,
    budgets: ContextBudgets | None = None,
    counter: TokenCounter | None = None,
    no_stm_providers: frozenset[str] = NO_STM_PROVIDERS,
    max_thread_messages: int | None = None,
    context_builder: ContextBuilder | None = None,
) -> CompiledStateGraph[TurnGraphState, TurnContext, TurnGraphState, TurnGraphState]:
    """Compile the per-turn memory graph.

    Args:
        model: any LangChain chat model that supports tool calling.
        store: the kioku store (long-term memory).
        checkpointer: the graph's checkpointer (``store.checkpointer()`` for Postgres,
            ``InMemorySaver()`` for throwaway use, ``None`` for LangGraph Studio, which
            brings its own).
        stm: short-term memory; by default kept in ``checkpointer``, or in the store's
            ``PostgresSaver`` when the graph has none.
        system_prompt: the first item of the context.
        max_tool_rounds: tool rounds allowed per turn.
        intent_gate: the long-term-memory intent detector.
        budgets: token budgets per memory block.
        counter: token counter (tiktoken cl100k by default).
        no_stm_providers: providers that cannot use the short-term-memory tool.
        max_thread_messages: messages a conversation thread keeps after each turn's
            capture (whole turns, the latest always); ``KIOKU_THREAD_MAX_MESSAGES``
            (``store.settings.thread_max_messages``) by default.
        context_builder: the builder that renders each turn's context, instead of one made
            from ``stm``, ``counter``, ``budgets`` and ``no_stm_providers``.

    Invoke it with ``context=TurnContext(...)`` and a ``thread_id`` per conversation.
    """
    if max_thread_messages is not None and max_thread_messages < 1:
        raise ValueError("max_thread_messages must be at least 1")
    stm = stm or ShortTermMemory(store, checkpointer or store.checkpointer())
    store.start_sweeper()  # a process that runs turns is long-lived: keep checkpoints bounded
    builder = context_builder or ContextBuilder(
        store,
        stm,
        counter=counter or TiktokenCounter(),
        budgets=budgets or ContextBudgets(),
        no_stm_providers=no_stm_providers,
    )
    turn = TurnGraph(
        model,
        store,
        stm,
        system_prompt=system_prompt,
        max_tool_rounds=max_tool_rounds,
        intent_gate=intent_gate or IntentGate(),
        builder=builder,
        no_stm_providers=no_stm_providers,
        max_thread_messages=(
            store.settings.thread_max_messages
            if max_thread_messages is None
            else max_thread_messages
        ),
    )
    graph = StateGraph(TurnGraphState, context_schema=TurnContext)
    graph.add_node("intent_gate", turn.intent_gate_node)
    graph.add_node("build_context", turn.context_node)
    graph.add_node("generate", turn.generate_node)
    tools = [*turn.ltm_tools, turn.stm_tool, turn.search_tool]
    graph.add_node("tools", ToolNode(tools, handle_tool_errors=True))
    graph.add_node("stm_dedup", turn.dedup_node)
    graph.add_node("close_calls", turn.close_calls_node)
    graph.add_node("capture", turn.capture_node)
    graph.add_edge(START, "intent_gate")
    graph.add_edge("intent_gate", "build_context")
    graph.add_edge("build_context", "generate")
    graph.add_conditional_edges("generate", turn.after_generate)
    graph.add_edge("tools", "stm_dedup")
    graph.add_edge("stm_dedup", "generate")
    graph.add_edge("close_calls", "capture")
    graph.add_edge("capture", END)
    return graph.compile(checkpointer=checkpointer, name="kioku_turn")
