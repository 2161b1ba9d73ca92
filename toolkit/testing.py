"""A scripted, tool-calling chat model for demos, notebooks and tests (no network)."""

from __future__ import annotations

import uuid
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict

PROMPT_LOG = 100
"""Prompts (and offered tool names) a :class:`Script` keeps, newest last."""

Reply = AIMessage | Callable[[Sequence[BaseMessage], tuple[str, ...]], AIMessage]
"""A scripted reply, or a function of (prompt, offered tool names) returning one."""


def echo(prompt: Sequence[BaseMessage], offered: tuple[str, ...]) -> AIMessage:
    """A fallback reply that repeats the latest user message."""
    latest = next((m for m in reversed(prompt) if m.type == "human"), None)
    said = latest.text if latest is not None else ""
    return say(f"(scripted model) You said: {said}")


class Script:
    """Replies to hand out in order, and a log of what the model was shown."""

    def __init__(self, replies: Sequence[Reply] = (), *, fallback: Reply | None = None) -> None:
        """Start with ``replies`` (more can be appended with :meth:`add`).

        ``fallback`` answers once the replies run out (default: a fixed sentence).
        """
        self.replies: list[Reply] = list(replies)
        self.fallback: Reply = fallback or say("(the scripted model has nothing more to say)")
        # The latest prompts only: a long run (a soak, a demo left open) must not grow.
        self.prompts: deque[list[BaseMessage]] = deque(maxlen=PROMPT_LOG)
        self.offered: deque[tuple[str, ...]] = deque(maxlen=PROMPT_LOG)

    def add(self, *replies: Reply) -> None:
        """Append replies."""
        self.replies.extend(replies)


def say(text: str) -> AIMessage:
    """A plain assistant reply."""
    return AIMessage(content=text)


def call_tool(name: str, /, **args: Any) -> AIMessage:
    """An assistant message that calls one tool."""
    return AIMessage(
        content="", tool_calls=[{"name": name, "args": args, "id": f"call_{uuid.uuid4().hex[:10]}"}]
    )


class ScriptedChatModel(BaseChatModel):
    """Replies from a :class:`Script`; ``bind_tools`` records the offered tools.

    Example:
        ```python
        model = ScriptedChatModel(script=Script([call_tool("create_long_term_memory",
            memory_content="{user} likes tea", memory_scope="target_user",
            target_user="Alice"), say("Noted!")]))
        ```
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    script: Script
    offered_tools: tuple[str, ...] = ()

    @property
    def _llm_type(self) -> str:
        return "kioku-scripted"

    def bind_tools(
        self, tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool], **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """A copy of this model that records ``tools`` as offered."""
        names = tuple(convert_to_openai_tool(t)["function"]["name"] for t in tools)
        return self.model_copy(update={"offered_tools": names})

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.script.prompts.append(list(messages))
        self.script.offered.append(self.offered_tools)
        reply = self.script.replies.pop(0) if self.script.replies else self.script.fallback
        message = reply(messages, self.offered_tools) if callable(reply) else reply
        return ChatResult(generations=[ChatGeneration(message=message.model_copy())])
