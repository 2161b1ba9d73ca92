"""What every contender of the agent benchmark shares: the scripted model, a turn, trimming.

Every contender's agent runs the same :class:`kioku.testing.ScriptedChatModel`: each turn,
its first call asks for one memory tool (the contender's own, with this turn's
arguments), its second answers with text. The model's own time is nil, so a turn's time
is the agent's: middleware, tools, checkpoints, memory reads and writes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from kioku.testing import Script, ScriptedChatModel, say

USER = "alice"
"""The one user every contender talks to (kioku: ``TurnContext.for_user(USER, ...)``)."""

QUESTIONS = (
    "what tea does the shop serve on fridays?",
    "remind me what I like to cook",
    "do you remember the hiking plans?",
    "which books were recommended last week?",
)
"""The user's messages, in turn (none asks to remember: no explicit-intent path)."""

REPLY = "Here is what I remember."
"""The model's answer once its tool call is answered."""

THREAD_MAX_MESSAGES = 20
"""Messages every contender's thread keeps (kioku's ``KIOKU_THREAD_MAX_MESSAGES``)."""

UPDATABLE = 20
"""Turns update the user's first 20 memories in turn (the memory count stays steady)."""


def update_text(i: int, user: str = "{user}") -> str:
    """The new content turn ``i``'s tool call writes (1,261 distinct texts)."""
    return f"{user} asked about topic {i % 97} in turn batch {i % 13}"


def every_text() -> list[str]:
    """Every text a turn embeds: questions, reply and update contents (precomputed)."""
    updates = [update_text(i, who) for i in range(97 * 13) for who in ("{user}", USER)]
    return [*QUESTIONS, REPLY, *dict.fromkeys(updates)]


class ToolThenAnswer:
    """The scripted policy: the turn's tool call first, then :data:`REPLY`.

    ``turn`` is set by :meth:`Contender.turn` before each invoke; ``call(turn)`` is the
    contender's tool call for that turn.
    """

    def __init__(self, call: Callable[[int], AIMessage]) -> None:
        """Answer with ``call(turn)`` while the latest message is the user's."""
        self.call = call
        self.turn = 0

    def __call__(self, prompt: Sequence[BaseMessage], offered: tuple[str, ...]) -> AIMessage:
        """The tool call when the turn has not called one yet, else the reply."""
        if prompt and prompt[-1].type == "tool":
            return say(REPLY)
        return self.call(self.turn)


def scripted_model(policy: ToolThenAnswer) -> ScriptedChatModel:
    """The same model class for every contender, replying as ``policy`` says."""
    return ScriptedChatModel(script=Script(fallback=policy))


class TrimThread(AgentMiddleware[AgentState[Any], Any, Any]):
    """After the agent, removes the oldest whole turns beyond ``max_messages`` messages.

    The peers' equivalent of kioku's trimming: the thread keeps at most ``max_messages``
    messages, starting at a user message, the latest turn always whole.
    """

    def __init__(self, max_messages: int = THREAD_MAX_MESSAGES) -> None:
        """Keep ``max_messages``."""
        super().__init__()
        self.max_messages = max_messages

    def after_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """The removals of the messages before the first kept user message."""
        messages = state["messages"]
        starts = [k for k, m in enumerate(messages) if isinstance(m, HumanMessage)]
        fits = [k for k in starts if len(messages) - k <= self.max_messages]
        cut = fits[0] if fits else (starts[-1] if starts else 0)
        if cut == 0:
            return None
        return {"messages": [RemoveMessage(id=m.id) for m in messages[:cut] if m.id]}


@dataclass
class Contender:
    """One agent set up for the benchmark, and how to read its figures."""

    agent: Any
    """The compiled ``create_agent`` graph."""
    policy: ToolThenAnswer
    config: RunnableConfig
    memory_tokens: Callable[[dict[str, Any]], int]
    """Tokens of the memory text the last turn put before the model (cl100k)."""
    context: Any = None
    resources: ExitStack = field(default_factory=ExitStack)

    def turn(self, i: int) -> dict[str, Any]:
        """Run turn ``i`` (question ``i`` and tool call ``i``); the final state."""
        self.policy.turn = i
        question = HumanMessage(QUESTIONS[i % len(QUESTIONS)])
        state: dict[str, Any] = self.agent.invoke(
            {"messages": [question]}, self.config, context=self.context
        )
        return state

    def close(self) -> None:
        """Release the contender's connections and pools."""
        self.resources.close()
