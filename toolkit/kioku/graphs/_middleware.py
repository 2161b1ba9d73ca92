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

The middleware runs the :class:`~kioku.graphs._steps.TurnSteps` the per-turn graph runs,
inside the agent's own model and tool steps but for the capture, its one step (and one
checkpoint) of its own. Around each model call: on the turn's first call the intent gate,
interrupted-call repair and the context build; on every call the memory blocks placed
before the messages the agent hands the model, and only the memory tools this turn allows;
after the reply, the tool-round limit. Around each tool call: memory tools past the round
limit are answered instead of run. After the agent (after every ``after_model`` hook):
passive capture into short-term memory and trimming of the thread.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Unpack, cast

from langchain.agents.middleware import (
    AgentMiddleware,
    AgentState,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
)
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    ToolMessage,
)
from langchain_core.tools import BaseTool
from langgraph.channels import UntrackedValue
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import Runtime
from langgraph.types import Command

from kioku._authorship import is_user_message, stamp_reply
from kioku._awaiting import off_loop
from kioku._context import TurnContext, require_turn_context
from kioku._state import TurnFlagKeys
from kioku._store import KiokuStore
from kioku._tools.catalog import TOOL_NAMES
from kioku.graphs._options import TurnOptions
from kioku.graphs._repair import with_answered_calls, without_unanswered_calls
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


TURN_KEY = "kioku_turn"
CONTEXT_TURN_KEY = "kioku_context_turn"
KEPT_VALUES = frozenset({*TurnFlagKeys.__annotations__, "kioku_search_offered"})
"""State keys written only when their value changes: each write is a row of the
checkpointer's (and a value it keeps), and a turn usually leaves them as they were."""


def changed_only(update: Mapping[str, Any], state: Mapping[str, Any]) -> dict[str, Any]:
    """``update`` less the :data:`KEPT_VALUES` that ``state`` holds already (pure)."""
    return {
        key: value
        for key, value in update.items()
        if key not in KEPT_VALUES or key not in state or state[key] != value
    }


class KiokuAgentState(AgentState[Any], TurnFlagKeys, BuiltContextKeys):
    """The agent's state plus kioku's per-turn flags and this turn's memory context."""

    kioku_turn: str
    """The id of the user message whose turn was opened (flags reset, thread repaired)."""
    kioku_context_turn: Annotated[str | None, UntrackedValue(object)]
    """The turn whose memory context the state holds (never checkpointed, like it)."""


@dataclass(frozen=True)
class _TurnView:
    """One model call's view of its turn."""

    state: Mapping[str, Any]
    """The agent's state as the turn's opening leaves it."""
    update: dict[str, Any]
    """What this call changes in the agent's state besides the model's reply."""
    context: TurnContext


def _context_of(runtime: Runtime[Any]) -> TurnContext:
    return require_turn_context(runtime.context)


class KiokuMemoryMiddleware(AgentMiddleware[KiokuAgentState, TurnContext, Any]):
    """Memory context, per-turn tool availability and capture for ``create_agent``.

    Give the agent ``tools=memory_tools(store)`` (the middleware registers none itself) and
    ``context_schema=TurnContext``. The agent's own tools are always offered; kioku's follow
    the same rules as in :func:`kioku.graphs.build_graph`.
    """

    state_schema = KiokuAgentState

    def __init__(self, store: KiokuStore, **options: Unpack[TurnOptions]) -> None:
        """Wrap ``store``; the options mean what they mean for ``build_graph``.

        Args:
            store: the kioku store.
            **options: the memory options (:class:`~kioku.graphs._options.TurnOptions`);
                ``stm`` is the store's own short-term memory by default, the one
                ``memory_tools(store)`` uses too.

        Raises:
            ConfigurationError: an unknown option, or one out of range.
        """
        super().__init__()
        # The agent's own system message comes first: no system prompt of kioku's.
        self.steps = TurnSteps.assemble(store, **options)
        self.tools: Sequence[BaseTool] = []
        self._tools_seen = False
        """Whether the agent's tools were checked for kioku's (once, on the first call)."""

    # around each model call: the turn's start, its prompt, its tools and its end -------

    def _opened(self, request: ModelRequest[TurnContext]) -> _TurnView:
        """The turn as this model call sees it, and what it changes in the agent's state.

        The first call of a turn opens it (intent gate, repair, authorship) and builds the
        memory context; a later call reuses them, except after a resume from a checkpoint,
        which keeps no context (it is rebuilt). Whether the summary was written is read
        off this turn's tool results.
        """
        state = request.state
        context = _context_of(request.runtime)
        messages: list[AnyMessage] = list(state["messages"])
        turn = _turn_id(messages, cast("str | None", state.get(TURN_KEY)))
        update: dict[str, Any] = {}
        if state.get(TURN_KEY) != turn:
            # Calls an interrupted turn left open are taken off their message in place (an
            # answer cannot be inserted after it through the reducer); the model is shown
            # them answered (see _request).
            repaired = {m.id: m for m in without_unanswered_calls(messages)}
            messages = [repaired.get(m.id, m) for m in messages]
            opening = self.steps.open_turn(messages, context)
            update = {**opening.update, TURN_KEY: turn}
            if repaired:  # written by id, as the opening's stamped copies are
                logger.warning("kioku: answering tool calls an interrupted turn left open")
                stamped = {m.id: m for m in update.get("messages", [])}
                update["messages"] = [*({**repaired, **stamped}).values()]
            messages = cast("list[AnyMessage]", opening.messages)
        if update or state.get(CONTEXT_TURN_KEY) != turn:
            flags = TurnFlags.of({**state, **update})
            update |= self.steps.build_context(messages, context, flags)
            update[CONTEXT_TURN_KEY] = turn
        written = summary_written(since_latest_human(messages))
        if written and not state.get("kioku_stm_updated", False):
            update["kioku_stm_updated"] = True
        view = {**state, **update, "messages": messages}
        return _TurnView(view, changed_only(update, state), context)

    def _request(
        self, request: ModelRequest[TurnContext], view: _TurnView
    ) -> ModelRequest[TurnContext]:
        if not self._tools_seen:
            self._tools_seen = True
            if not any(_tool_name(tool) in TOOL_NAMES for tool in request.tools):
                logger.warning(
                    "kioku: the agent has none of kioku's memory tools, so its model can "
                    "never save or change a memory; pass tools=[*memory_tools(store), ...] "
                    "to create_agent"
                )
        # The model sees what the agent hands it (an outer middleware's edits, LangChain's
        # answers to malformed calls), with calls an interrupted turn left open answered.
        messages = with_answered_calls(request.messages) or request.messages
        offered = self.steps.offered_tools(
            view.context, TurnFlags.of(view.state), tool_rounds(messages)
        )
        tools = [
            tool
            for tool in request.tools
            if _tool_name(tool) not in TOOL_NAMES or _tool_name(tool) in offered
        ]
        prompt = cast("list[AnyMessage]", TurnSteps.prompt(view.state, messages))
        return request.override(messages=prompt, tools=tools)

    def _closed(self, response: ModelResponse[Any], view: _TurnView) -> ExtendedModelResponse[Any]:
        """The model's reply, stamped, with the turn's state changes.

        Past the tool-round limit, a reply calling only memory tools is answered at once
        and ends the turn.
        """
        result = [
            stamp_reply(m, view.context) if isinstance(m, AIMessage) else m for m in response.result
        ]
        reply = next((m for m in reversed(result) if isinstance(m, AIMessage)), None)
        update = dict(view.update)
        limited = self._limited(view.state["messages"], reply)
        if limited:
            result += limited
            update["jump_to"] = "end"
        return ExtendedModelResponse(
            model_response=ModelResponse(
                result=result, structured_response=response.structured_response
            ),
            command=Command(update=update) if update else None,
        )

    def _limited(
        self, messages: Sequence[AnyMessage], reply: AIMessage | None
    ) -> list[ToolMessage]:
        """Answers to ``reply``'s calls when it calls only memory tools past the limit.

        (Mixed with the agent's own tools, the memory calls are answered one by one in
        :meth:`wrap_tool_call` and the agent goes on.)
        """
        if reply is None or not reply.tool_calls:
            return []
        if not all(call["name"] in TOOL_NAMES for call in reply.tool_calls):
            return []
        if tool_rounds([*messages, reply]) <= self.steps.max_tool_rounds:
            return []
        return [round_limit_answer(call) for call in reply.tool_calls]

    def wrap_model_call(
        self,
        request: ModelRequest[TurnContext],
        handler: Callable[[ModelRequest[TurnContext]], ModelResponse[Any]],
    ) -> ExtendedModelResponse[Any]:
        """Call the model with the memory context and this turn's memory tools."""
        view = self._opened(request)
        response = handler(self._request(request, view))
        return self._closed(response, view)

    async def awrap_model_call(
        self,
        request: ModelRequest[TurnContext],
        handler: Callable[[ModelRequest[TurnContext]], Awaitable[ModelResponse[Any]]],
    ) -> ExtendedModelResponse[Any]:
        """Async :meth:`wrap_model_call` (the database work off the event loop)."""
        view = await off_loop(self._opened, request)
        response = await handler(self._request(request, view))
        return self._closed(response, view)

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
        """Capture the dialogue into short-term memory; trim the thread.

        A step of its own, after every ``after_model`` hook, so the reply captured
        is the one the thread keeps (an output guard's rewrite, not the model's draft).
        """
        return self.steps.capture(state["messages"], _context_of(runtime)) or None

    async def aafter_agent(
        self, state: KiokuAgentState, runtime: Runtime[TurnContext]
    ) -> dict[str, Any] | None:
        """:meth:`after_agent` off the event loop."""
        return await off_loop(self.after_agent, state, runtime)


def _tool_name(tool: BaseTool | dict[str, Any]) -> str:
    return tool.name if isinstance(tool, BaseTool) else str(tool.get("name", ""))


def _turn_id(messages: Sequence[BaseMessage], current: str | None) -> str:
    """The id of the turn's user message (LangGraph gives every message of a thread one).

    When a summary (``SummarizationMiddleware``) replaced every user message, the turn
    under way (``current``) goes on: no new user message came.
    """
    for message in reversed(messages):
        if is_user_message(message):
            return message.id or ""
    return current if current is not None else ""
