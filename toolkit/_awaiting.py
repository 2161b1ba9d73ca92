"""Application callbacks that may be ``async``, called from kioku's worker threads.

Async entry points (tools' ``ainvoke``, async graph nodes and middleware hooks) run
kioku's blocking work in a worker thread and remember the event loop they came from. A
callback the application wrote as ``async def`` (a notifier, a user directory) then runs
on that loop, where its own connections live, while the worker waits for its result.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable
from contextvars import ContextVar
from typing import TypeVar, cast

T = TypeVar("T")

_CALLER_LOOP: ContextVar[asyncio.AbstractEventLoop | None] = ContextVar(
    "kioku_caller_loop", default=None
)


def remember_caller_loop() -> None:
    """Record the running loop for the work this task hands to worker threads."""
    _CALLER_LOOP.set(asyncio.get_running_loop())


def resolved(value: T | Awaitable[T]) -> T:
    """``value``, or what it resolves to when a callback returned an awaitable.

    Awaited on the caller's loop when kioku runs in a worker thread for it, else on a
    loop of its own (a sync caller).
    """
    if not inspect.isawaitable(value):
        return value

    async def wait() -> T:
        return await cast(Awaitable[T], value)

    loop = _CALLER_LOOP.get()
    if loop is not None and loop.is_running() and not _on_loop_thread(loop):
        return asyncio.run_coroutine_threadsafe(wait(), loop).result()
    return asyncio.run(wait())


def _on_loop_thread(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


__all__ = ["remember_caller_loop", "resolved"]
