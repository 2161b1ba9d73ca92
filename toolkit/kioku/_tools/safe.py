"""A ``StructuredTool`` that survives any argument name a model invents.

LangChain passes tool arguments as keywords to ``StructuredTool._run(self, *, config,
run_manager, ...)``: a model that sends an argument called ``self`` or ``config`` makes
that call raise ``TypeError`` inside the graph. This tool carries such arguments past the
call under one private name and hands them back to the function, whose own validation
then answers with a status (``unknown argument(s) self``) like for any other.
"""

from __future__ import annotations

from dataclasses import is_dataclass, replace
from functools import partial
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForToolRun, CallbackManagerForToolRun
from langchain_core.messages import ToolCall
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import StructuredTool

from kioku._awaiting import off_loop

MAX_ARGUMENT_DEPTH = 64
"""Arguments nested deeper are refused before LangChain handles them: printing them for
its callbacks would exhaust the interpreter's recursion limit inside the graph."""
TOO_DEEP = f"arguments_nested_more_than_{MAX_ARGUMENT_DEPTH}_levels"
"""The one argument a call nested too deep is replaced by; each tool refuses it by name."""

INJECTED_RUNTIME = "runtime"
"""The argument LangGraph's ``ToolNode`` fills with the ``ToolRuntime`` (kioku's tools' own)."""

RESERVED = frozenset({"self", "config", "run_manager", "args", "kwargs"})
_PACKED = "kioku_reserved_arguments"
_CARRIED = RESERVED | {_PACKED}
"""Carried under ``_PACKED``: a model's own ``kioku_reserved_arguments`` too, never unpacked."""


class ArgumentSafeTool(StructuredTool):
    """``StructuredTool`` whose model-supplied arguments never clash with its own names."""

    def _to_args_and_kwargs(
        self, tool_input: str | dict[str, Any], tool_call_id: str | None
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        args, kwargs = super()._to_args_and_kwargs(tool_input, tool_call_id)
        reserved = {key: kwargs.pop(key) for key in list(kwargs) if key in _CARRIED}
        if reserved:
            kwargs[_PACKED] = reserved
        return args, kwargs

    def _run(
        self,
        *args: Any,
        config: RunnableConfig,
        run_manager: CallbackManagerForToolRun | None = None,
        **kwargs: Any,
    ) -> Any:
        if self.func is None:
            raise NotImplementedError(f"{self.name} has no synchronous function")
        return self.func(*args, **_unpacked(kwargs))

    async def _arun(
        self,
        *args: Any,
        config: RunnableConfig,
        run_manager: AsyncCallbackManagerForToolRun | None = None,
        **kwargs: Any,
    ) -> Any:
        arguments = _unpacked(kwargs)
        if self.coroutine is not None:
            return await self.coroutine(*args, **arguments)
        if self.func is None:
            raise NotImplementedError(f"{self.name} has no function")
        # The tools' work is blocking I/O: a worker thread keeps the event loop free
        # (contextvars copied, so LangGraph's runtime and config reach the function).
        return await off_loop(partial(self.func, *args, **arguments))

    def run(self, tool_input: str | dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        """Run the tool; arguments nested too deep reach it as :data:`TOO_DEEP` alone.

        ``invoke`` and ``ainvoke`` (and so LangGraph's ``ToolNode``) come through here.
        """
        return super().run(self._shallow(tool_input), *args, **kwargs)

    async def arun(self, tool_input: str | dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        """:meth:`run`'s check, for a caller awaiting ``arun`` itself."""
        return await super().arun(self._shallow(tool_input), *args, **kwargs)

    def _filter_injected_args(self, tool_input: dict[str, Any]) -> dict[str, Any]:
        """The arguments LangChain prints for its callbacks: never the injected runtime.

        LangChain recognises an injected runtime by the function's annotation, which it
        cannot resolve here; printed, the runtime is the whole graph state (every message
        and memory block), built as text on every call.
        """
        filtered = super()._filter_injected_args(tool_input)
        return {k: v for k, v in filtered.items() if k != INJECTED_RUNTIME}

    def _shallow(self, tool_input: str | dict[str, Any]) -> str | dict[str, Any]:
        """``tool_input``, or :data:`TOO_DEEP` when the model's arguments nest too deep.

        What LangGraph injected (the runtime, with the turn's context) is kept.
        """
        if not isinstance(tool_input, dict):
            return tool_input
        injected = getattr(self, "_injected_args_keys", None) or frozenset({INJECTED_RUNTIME})
        model_args = {k: v for k, v in tool_input.items() if k not in injected}
        if not _nested_deeper(model_args, MAX_ARGUMENT_DEPTH):
            return tool_input
        kept = {k: _without_state(v) for k, v in tool_input.items() if k in injected}
        return {**kept, TOO_DEEP: True}

    async def ainvoke(
        self,
        input: str | dict[str, Any] | ToolCall,
        config: RunnableConfig | None = None,
        **kwargs: Any,
    ) -> Any:
        """Run the tool in one of kioku's worker threads (:func:`kioku._awaiting.off_loop`).

        The embedder (``aembed_*``) and an ``async def`` notifier or user directory the call
        needs are awaited back on this event loop.
        """
        return await off_loop(self.invoke, input, config, **kwargs)


def _unpacked(kwargs: dict[str, Any]) -> dict[str, Any]:
    reserved = kwargs.pop(_PACKED, None) or {}
    return {**kwargs, **reserved}


def _without_state(injected: Any) -> Any:
    """An injected ``ToolRuntime`` without the graph's state; the turn's context stays.

    The state's messages hold the deep call too, and LangChain prints the runtime with the
    arguments.
    """
    if is_dataclass(injected) and not isinstance(injected, type) and hasattr(injected, "state"):
        return replace(injected, state={})
    return injected


def _nested_deeper(value: Any, limit: int) -> bool:
    """Whether ``value``'s lists and dicts nest more than ``limit`` levels (no recursion)."""
    pending = [(value, 0)]
    while pending:
        node, depth = pending.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list | tuple):
            children = node
        else:
            continue
        if depth >= limit:
            return True
        pending.extend((child, depth + 1) for child in children)
    return False
