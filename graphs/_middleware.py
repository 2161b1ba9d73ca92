"""kioku's memory for any LangChain v1 ``create_agent`` agent, as middleware.

```python
agent = create_agent(
    model,
    tools=memory_tools(store),
    middleware=[KiokuMemoryMiddleware(store)],
    context_schema=TurnContext,
    checkpointer=store.checkpointer(),
)
agent.invoke({"messages": [...]}, {"configurable": {"thread_id": "t1"}}, context=context)
```

Each hook runs one of the :class:`~kioku.graphs._steps.TurnSteps` the per-turn graph runs:
before the agent, the intent gate, interrupted-call repair and the context build; around
each model call, the memory blocks placed before the dialogue and only the memory tools
this turn allows; after each model call, the tool-round limit; after the agent, passive
capture into short-term memory and trimming of the thread.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, cast

from langchain.agents.middleware import (
    AgentMiddleware,
    AgentState,
    ModelRequest,
    ModelResponse,
    hook_config,
)
from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import Runtime
from langgraph.types import Command

from kioku._authorship import stamp_reply
from kioku._awaiting import off_loop
from kioku._context import NO_STM_PROVIDERS, TurnContext, require_turn_context
from kioku._context_build.build import ContextBuilder
from kioku._context_build.render import ContextBudgets
from kioku._context_build.tokens import TokenCounter
from kioku._intent import IntentGate
from kioku._state import TurnFlagKeys
from kioku._stm.store import ShortTermMemory
from kioku._store import KiokuStore
from kioku._tools.catalog import TOOL_NAMES
from kioku.graphs._state import BuiltContextKeys
from kioku.graphs._steps import (
    TurnFlags,
    TurnSteps,
    round_limit_answer,
    since_latest_human,
    summary_written,
    tool_rounds,
)

logger = logging.getLogger(__name__)


class KiokuAgentState(AgentState[Any], TurnFlagKeys, BuiltContextKeys):
    """The agent's state plus kioku's per-turn flags and this turn's memory context."""


def _context_of(runtime: Runtime[Any]) -> TurnContext:
    return require_turn_context(runtime.context)


class KiokuMemoryMiddleware(AgentMiddleware[KiokuAgentState, TurnContext, Any]):
    """Memory context, per-turn tool availability and capture for ``create_agent``.

    Give the agent ``tools=memory_tools(store)`` (the middleware registers none itself) and
    ``context_schema=TurnContext``. The agent's own tools are always offered; kioku's follow
    the same rules as in :func:`kioku.graphs.build_graph`.
    """

    state_schema = KiokuAgentState

    def __init__(
        self,
        store: KiokuStore,
        *,
        stm: ShortTermMemory | None = None,
        max_tool_rounds: int = 3,
        intent_gate: IntentGate | None = None,
        budgets: ContextBudgets | None = None,
        counter: TokenCounter | None = None,
        no_stm_providers: frozenset[str] = NO_STM_PROVIDERS,
        max_thread_messages: int | None = None,
        context_builder: ContextBuilder | None = None,
    ) -> None:
        """Wrap ``store``; the arguments mean what they mean for ``build_graph``.

        Args:
            store: the kioku store.
            stm: short-term memory; the store's own (``store.short_term_memory()``, which
                ``memory_tools(store)`` uses too) by default.
            max_tool_rounds: rounds of memory tools allowed per turn.
            intent_gate: the long-term-memory intent detector.
            budgets: token budgets per memory block.
            counter: token counter (tiktoken cl100k by default).
            no_stm_providers: providers that cannot use the short-term-memory tool.
            max_thread_messages: messages the agent's thread keeps after each turn's
                capture (whole turns, the latest always); ``KIOKU_THREAD_MAX_MESSAGES`` by
                default.
            context_builder: the builder that renders each turn's context.
        """
        super().__init__()
        self.steps = TurnSteps.assemble(
            store,
            stm or store.short_term_memory(),
            system_prompt="",  # the agent's own system message comes first
            max_tool_rounds=max_tool_rounds,
            intent_gate=intent_gate,
            budgets=budgets,
            counter=counter,
            no_stm_providers=no_stm_providers,
            max_thread_messages=max_thread_messages,
            context_builder=context_builder,
        )
        self.tools: Sequence[BaseTool] = []
        self._tools_seen = False
        """Whether the agent's tools were checked for kioku's (once, on the first call)."""

    # before the agent: intent gate, repair, context build -------------------------------

    def before_agent(
        self, state: KiokuAgentState, runtime: Runtime[TurnContext]
    ) -> dict[str, Any] | None:
        """Start the turn and build its memory context."""
        context = _context_of(runtime)
        update, messages = self.steps.open_turn(state["messages"], context)
        return {**update, **self.steps.build_context(messages, context, TurnFlags.of(update))}

    async def abefore_agent(
        self, state: KiokuAgentState, runtime: Runtime[TurnContext]
    ) -> dict[str, Any] | None:
        """:meth:`before_agent` off the event loop."""
        return await off_loop(self.before_agent, state, runtime)

    # before each model call: the summary dedup flag --------------------------------------

    def before_model(
        self, state: KiokuAgentState, runtime: Runtime[TurnContext]
    ) -> dict[str, Any] | None:
        """Set the STM flag once this turn's summary write succeeded."""
        if state.get("kioku_stm_updated", False):
            return None
        if summary_written(since_latest_human(state["messages"])):
            return {"kioku_stm_updated": True}
        return None

    async def abefore_model(
        self, state: KiokuAgentState, runtime: Runtime[TurnContext]
    ) -> dict[str, Any] | None:
        """:meth:`before_model` (no I/O)."""
        return self.before_model(state, runtime)

    # around each model call: memory blocks and this turn's tools -------------------------

    def _request(
        self, request: ModelRequest[TurnContext], state: Mapping[str, Any]
    ) -> ModelRequest[TurnContext]:
        context = _context_of(request.runtime)
        messages = request.messages
        if not self._tools_seen:
            self._tools_seen = True
            if not any(_tool_name(tool) in TOOL_NAMES for tool in request.tools):
                logger.warning(
                    "kioku: the agent has none of kioku's memory tools, so its model can "
                    "never save or change a memory; pass tools=[*memory_tools(store), ...] "
                    "to create_agent"
                )
        offered = self.steps.offered_tools(context, TurnFlags.of(state), tool_rounds(messages))
        tools = [
            tool
            for tool in request.tools
            if _tool_name(tool) not in TOOL_NAMES or _tool_name(tool) in offered
        ]
        prompt = cast("list[AnyMessage]", TurnSteps.prompt(state, messages))
        return request.override(messages=prompt, tools=tools)

    def _rebuilt(self, request: ModelRequest[TurnContext]) -> dict[str, Any]:
        """The turn's memory context, built again (it is never checkpointed)."""
        state = request.state
        return self.steps.build_context(
            state["messages"], _context_of(request.runtime), TurnFlags.of(state)
        )

    @staticmethod
    def _lost(request: ModelRequest[TurnContext]) -> bool:
        """Whether the memory context is missing.

        A run resumed after an interrupt starts from the checkpoint, which does not keep
        the context, and ``before_agent`` does not run again.
        """
        return not request.state.get("kioku_memory_context")

    def wrap_model_call(
        self,
        request: ModelRequest[TurnContext],
        handler: Callable[[ModelRequest[TurnContext]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        """Call the model with the memory context and this turn's memory tools."""
        state: Mapping[str, Any] = request.state
        if self._lost(request):
            state = {**state, **self._rebuilt(request)}
        response = handler(self._request(request, state))
        return _stamped(response, _context_of(request.runtime))

    async def awrap_model_call(
        self,
        request: ModelRequest[TurnContext],
        handler: Callable[[ModelRequest[TurnContext]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        """Async :meth:`wrap_model_call`."""
        state: Mapping[str, Any] = request.state
        if self._lost(request):
            state = {**state, **await off_loop(self._rebuilt, request)}
        response = await handler(self._request(request, state))
        return _stamped(response, _context_of(request.runtime))

    # after each model call: the tool-round limit -----------------------------------------

    @hook_config(can_jump_to=["end"])
    def after_model(
        self, state: KiokuAgentState, runtime: Runtime[TurnContext]
    ) -> dict[str, Any] | None:
        """Past the round limit, answer a call of memory tools only and end the turn.

        (Mixed with the agent's own tools, the memory calls are answered one by one in
        :meth:`wrap_tool_call` and the agent goes on.)
        """
        messages = state["messages"]
        last = messages[-1] if messages else None
        if not isinstance(last, AIMessage) or not last.tool_calls:
            return None
        if not all(call["name"] in TOOL_NAMES for call in last.tool_calls):
            return None
        if tool_rounds(messages) <= self.steps.max_tool_rounds:
            return None
        return {
            "messages": [round_limit_answer(call) for call in last.tool_calls],
            "jump_to": "end",
        }

    @hook_config(can_jump_to=["end"])
    async def aafter_model(
        self, state: KiokuAgentState, runtime: Runtime[TurnContext]
    ) -> dict[str, Any] | None:
        """:meth:`after_model` (no I/O)."""
        return self.after_model(state, runtime)

    # each tool call: memory tools past the round limit -----------------------------------

    def _past_limit(self, request: ToolCallRequest) -> ToolMessage | None:
        call = request.tool_call
        if call["name"] not in TOOL_NAMES:
            return None
        if tool_rounds(request.state["messages"]) <= self.steps.max_tool_rounds:
            return None
        return round_limit_answer(call)

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        """Answer a memory tool call made past the round limit instead of running it."""
        return self._past_limit(request) or handler(request)

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        """Async :meth:`wrap_tool_call`."""
        return self._past_limit(request) or await handler(request)

    # after the agent: passive capture and trimming ---------------------------------------

    def after_agent(
        self, state: KiokuAgentState, runtime: Runtime[TurnContext]
    ) -> dict[str, Any] | None:
        """Capture the dialogue into short-term memory; trim the thread."""
        return self.steps.capture(state["messages"], _context_of(runtime)) or None

    async def aafter_agent(
        self, state: KiokuAgentState, runtime: Runtime[TurnContext]
    ) -> dict[str, Any] | None:
        """:meth:`after_agent` off the event loop."""
        return await off_loop(self.after_agent, state, runtime)


def _tool_name(tool: BaseTool | dict[str, Any]) -> str:
    return tool.name if isinstance(tool, BaseTool) else str(tool.get("name", ""))


def _stamped(response: ModelResponse[Any], context: TurnContext) -> ModelResponse[Any]:
    """The model's replies stamped as answering the turn's user (see ``authorship``)."""
    result = [stamp_reply(m, context) if isinstance(m, AIMessage) else m for m in response.result]
    return ModelResponse(result=result, structured_response=response.structured_response)
