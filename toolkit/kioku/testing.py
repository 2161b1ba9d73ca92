"""A scripted, tool-calling chat model for demos, notebooks and tests (no network)."""

from __future__ import annotations

import json
import re
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
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


# Linear-time patterns (untrusted chat text): trailing punctuation is stripped afterwards.
_REMEMBER = re.compile(r"\s*(?:please\s+)?remember\s+(?:that\s+)?(?P<fact>\S.*)", re.I | re.S)
_FORGET = re.compile(r"\s*(?:please\s+)?forget\s+(?:that\s+|about\s+)?(?P<what>\S.*)", re.I | re.S)
_TRAILING = " \t\r\n.!"
_RECALL = re.compile(r"what\s+do\s+you\s+(?:remember|know)", re.I)
_MEMORY = re.compile(r"ID:(?P<id>\d+) (?:\([^)\n]*\) )?(?P<text>.+?)(?=; ID:\d+ |\n|$)")
"""A memory line, ``ID:N (when) text``: the id and the text."""
_WORDS = re.compile(r"[a-z0-9']+")
_THIRD_PERSON = {"am": "is", "have": "has", "do": "does", "go": "goes", "was": "was"}


def _about_the_speaker(fact: str) -> str | None:
    """``fact`` about ``{user}`` when the speaker says it of themselves ("I like tea")."""
    words = fact.split()
    first = words[0].lower() if words else ""
    if first == "i'm":
        return " ".join(["{user} is", *words[1:]])
    if first == "my":
        return " ".join(["{user}'s", *words[1:]])
    if words[:1] == ["I"] and len(words) > 1:
        verb = words[1].lower()
        third = _THIRD_PERSON.get(verb) or (verb if verb.endswith("s") else verb + "s")
        return " ".join(["{user}", third, *words[2:]])
    return None


def _speaker() -> str:
    """The display name of the turn's user, from the running graph's context."""
    from langgraph.runtime import get_runtime

    from kioku._context import turn_context_of

    try:
        context = turn_context_of(get_runtime().context)
    except RuntimeError:  # not inside a graph
        context = None
    return context.user.display_name if context is not None else "me"


def _shown_memories(prompt: Sequence[BaseMessage]) -> list[tuple[int, str, bool]]:
    """(id, text, personal) of every memory the prompt's memory blocks show."""
    found = []
    for message in prompt:
        tag = str(message.additional_kwargs.get("kioku_tag", ""))
        if tag in ("server_memories", "personal_memories"):
            for match in _MEMORY.finditer(message.text):
                found.append((int(match["id"]), match["text"], tag == "personal_memories"))
    return found


def _shared_words(a: str, b: str) -> int:
    return len(set(_WORDS.findall(a.lower())) & set(_WORDS.findall(b.lower())))


def memory_commands(prompt: Sequence[BaseMessage], offered: tuple[str, ...]) -> AIMessage:
    """An offline reply that uses the memory tools when asked to (Studio without a key).

    "remember …" saves a memory (about the speaker when it starts with I / I'm / my,
    server-wide otherwise), "forget …" deletes the shown memory sharing most words with
    it, "what do you remember" lists the memories the turn's context shows; after a tool
    call it reports the tool's reason, and anything else is echoed.
    """
    latest = prompt[-1] if prompt else None
    if isinstance(latest, ToolMessage):
        results = []
        for message in reversed(prompt):
            if not isinstance(message, ToolMessage):
                break
            try:
                results.append(str(json.loads(str(message.content)).get("reason", "")))
            except ValueError:
                results.append(str(message.content))
        return say(" ".join(reversed(results)) or "Done.")
    said = latest.text if isinstance(latest, HumanMessage) else ""
    if (asked := _REMEMBER.match(said)) and "create_long_term_memory" in offered:
        fact = asked["fact"].rstrip(_TRAILING)
        personal = _about_the_speaker(fact)
        if personal is None:
            return call_tool(
                "create_long_term_memory", memory_content=fact, memory_scope="server_wide"
            )
        return call_tool(
            "create_long_term_memory",
            memory_content=personal,
            memory_scope="target_user",
            target_user=_speaker(),
        )
    if (asked := _FORGET.match(said)) and "update_long_term_memory" in offered:
        shown = _shown_memories(prompt)
        what = asked["what"].rstrip(_TRAILING)
        best = max(shown, key=lambda m: _shared_words(what, m[1]), default=None)
        if best is None or _shared_words(what, best[1]) == 0:
            return say("I have no memory like that.")
        memory_id, _, about_someone = best
        owner = {"target_user": _speaker()} if about_someone else {}
        return call_tool("update_long_term_memory", memory_id=memory_id, memory_content="", **owner)
    if _RECALL.search(said):
        shown = _shown_memories(prompt)
        if not shown:
            return say("I don't remember anything yet.")
        return say("I remember: " + "; ".join(f"ID:{i} {text}" for i, text, _ in shown))
    return echo(prompt, offered)
