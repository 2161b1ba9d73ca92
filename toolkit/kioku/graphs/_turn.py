"""The per-turn memory graph (SPEC §11).

intent gate → context build → generate ⇄ tools → STM-summary dedup → … → capture → end
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal, Unpack

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langgraph._internal._runnable import RunnableCallable
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode
from langgraph.runtime import Runtime

from kioku._authorship import stamp_reply
from kioku._awaiting import off_loop
from kioku._context import TurnContext, require_turn_context
from kioku._stm.store import ShortTermMemory
from kioku._store import KiokuStore
from kioku._tools.catalog import memory_tools
from kioku.graphs._options import TurnOptions
from kioku.graphs._state import TurnGraphState
from kioku.graphs._steps import (
    TurnFlags,
    TurnSteps,
    round_limit_answer,
    since_latest_human,
    summary_written,
    tool_rounds,
)


class TurnGraph:
    """The graph's nodes: each runs one of the shared :class:`TurnSteps`."""

    def __init__(self, model: BaseChatModel, steps: TurnSteps, tools: Sequence[BaseTool]) -> None:
        """See :func:`build_graph`."""
        self.model = model
        self.steps = steps
        self.tools = {tool.name: tool for tool in tools}

    def intent_gate_node(
        self, state: TurnGraphState, runtime: Runtime[TurnContext]
    ) -> dict[str, Any]:
        """Start the turn (:meth:`TurnSteps.open_turn`)."""
        return self.steps.open_turn(
            state.get("messages", []), require_turn_context(runtime.context)
        ).update

    def context_node(self, state: TurnGraphState, runtime: Runtime[TurnContext]) -> dict[str, Any]:
        """Render memories for this turn (:meth:`TurnSteps.build_context`)."""
        return self.steps.build_context(
            state.get("messages", []), require_turn_context(runtime.context), TurnFlags.of(state)
        )

    def offered_tools(self, state: TurnGraphState, context: TurnContext) -> list[BaseTool]:
        """The tools available for the next model call."""
        messages = state.get("messages", [])
        names = self.steps.offered_tools(context, TurnFlags.of(state), tool_rounds(messages))
        return [tool for name, tool in self.tools.items() if name in names]

    def _model_call(
        self, state: TurnGraphState, context: TurnContext
    ) -> tuple[Runnable[Any, BaseMessage], list[BaseMessage]]:
        """The model with this turn's tools bound, and its prompt."""
        tools = self.offered_tools(state, context)
        model = self.model.bind_tools(tools) if tools else self.model
        return model, TurnSteps.prompt(state, state.get("messages", []))

    def generate_node(self, state: TurnGraphState, runtime: Runtime[TurnContext]) -> dict[str, Any]:
        """Call the model with this turn's tools bound."""
        context = require_turn_context(runtime.context)
        model, prompt = self._model_call(state, context)
        return {"messages": [stamp_reply(model.invoke(prompt), context)]}

    def dedup_node(self, state: TurnGraphState) -> dict[str, Any]:
        """Set the STM flag after a successful summary write."""
        if summary_written(since_latest_human(state.get("messages", []))):
            return {"kioku_stm_updated": True}
        return {}

    def close_calls_node(self, state: TurnGraphState) -> dict[str, Any]:
        """Answer tool calls made after the round limit, so none is left unanswered."""
        last = state["messages"][-1]
        assert isinstance(last, AIMessage)
        return {"messages": [round_limit_answer(call) for call in last.tool_calls]}

    def capture_node(self, state: TurnGraphState, runtime: Runtime[TurnContext]) -> dict[str, Any]:
        """Capture and trim (:meth:`TurnSteps.capture`)."""
        return self.steps.capture(state.get("messages", []), require_turn_context(runtime.context))

    # async variants: the model is awaited, database work runs in a worker thread ----------

    async def acontext_node(
        self, state: TurnGraphState, runtime: Runtime[TurnContext]
    ) -> dict[str, Any]:
        """:meth:`context_node` off the event loop."""
        return await off_loop(self.context_node, state, runtime)

    async def agenerate_node(
        self, state: TurnGraphState, runtime: Runtime[TurnContext]
    ) -> dict[str, Any]:
        """:meth:`generate_node` with the model awaited."""
        context = require_turn_context(runtime.context)
        model, prompt = self._model_call(state, context)
        return {"messages": [stamp_reply(await model.ainvoke(prompt), context)]}

    async def acapture_node(
        self, state: TurnGraphState, runtime: Runtime[TurnContext]
    ) -> dict[str, Any]:
        """:meth:`capture_node` off the event loop."""
        return await off_loop(self.capture_node, state, runtime)

    # routing -----------------------------------------------------------------------------

    def after_generate(self, state: TurnGraphState) -> Literal["tools", "close_calls", "capture"]:
        """Run requested tools, unless the round limit is reached."""
        messages = state["messages"]
        last = messages[-1]
        if isinstance(last, AIMessage) and last.tool_calls:
            if tool_rounds(messages) > self.steps.max_tool_rounds:
                return "close_calls"
            return "tools"
        return "capture"


def _both(
    sync: Callable[..., dict[str, Any]], asynchronous: Callable[..., Awaitable[dict[str, Any]]]
) -> RunnableCallable:
    """A node with a sync and an async body (``invoke`` runs one, ``ainvoke`` the other).

    ``RunnableCallable`` is how LangGraph's own ``ToolNode`` pairs the two; it injects
    ``runtime`` like for a plain function.
    """
    return RunnableCallable(sync, asynchronous, name=sync.__name__.removesuffix("_node"))


def build_graph(
    model: BaseChatModel,
    store: KiokuStore,
    *,
    checkpointer: BaseCheckpointSaver[Any] | None = None,
    system_prompt: str = "",
    context_schema: type[Any] = TurnContext,
    **options: Unpack[TurnOptions],
) -> CompiledStateGraph[TurnGraphState, Any, TurnGraphState, TurnGraphState]:
    """Compile the per-turn memory graph.

    Args:
        model: any LangChain chat model that supports tool calling.
        store: the kioku store (long-term memory).
        checkpointer: the graph's checkpointer (``store.checkpointer()`` for Postgres,
            ``InMemorySaver()`` for throwaway use, ``None`` for LangGraph Studio, which
            brings its own).
        system_prompt: the first item of the context.
        context_schema: the graph's context: ``TurnContext``, or a class whose instances
            stand for one (``as_turn_context()``, e.g. ``AppContext``).
        **options: the memory options (:class:`~kioku.graphs._options.TurnOptions`);
            ``stm`` is by default kept beside ``checkpointer``, or in the store's
            ``PostgresSaver`` when the graph has none.

    Raises:
        ConfigurationError: an unknown option, or one out of range.

    Invoke it with ``context=TurnContext(...)`` and a ``thread_id`` per conversation.
    """
    if options.get("stm") is None and checkpointer is not None:
        options["stm"] = ShortTermMemory(store, checkpointer)
    steps = TurnSteps.assemble(store, system_prompt, **options)
    tools = memory_tools(store, steps.stm, no_stm_providers=steps.no_stm_providers)
    graph = _wired(TurnGraph(model, steps, tools), tools, context_schema)
    return graph.compile(checkpointer=checkpointer, name="kioku_turn")


def _wired(
    turn: TurnGraph, tools: Sequence[BaseTool], context_schema: type[Any]
) -> StateGraph[TurnGraphState, Any, TurnGraphState, TurnGraphState]:
    """The graph's nodes and edges (module docstring)."""
    graph = StateGraph(TurnGraphState, context_schema=context_schema)
    graph.add_node("intent_gate", turn.intent_gate_node)
    graph.add_node("build_context", _both(turn.context_node, turn.acontext_node))
    graph.add_node("generate", _both(turn.generate_node, turn.agenerate_node))
    graph.add_node("tools", ToolNode(tools, handle_tool_errors=True))
    graph.add_node("stm_dedup", turn.dedup_node)
    graph.add_node("close_calls", turn.close_calls_node)
    graph.add_node("capture", _both(turn.capture_node, turn.acapture_node))
    graph.add_edge(START, "intent_gate")
    graph.add_edge("intent_gate", "build_context")
    graph.add_edge("build_context", "generate")
    graph.add_conditional_edges("generate", turn.after_generate)
    graph.add_edge("tools", "stm_dedup")
    graph.add_edge("stm_dedup", "generate")
    graph.add_edge("close_calls", "capture")
    graph.add_edge("capture", END)
    return graph
