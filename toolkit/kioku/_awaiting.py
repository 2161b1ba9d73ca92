"""Blocking work off the event loop, and async callbacks and embedders awaited from it.

Async entry points (tools' ``ainvoke``, async graph nodes and middleware hooks) run
kioku's blocking work (the database, the flows) with :func:`off_loop`, in kioku's own
worker threads, and remember the event loop they came from. From there, an embedder is
awaited (``aembed_*``) on that loop, and a callback the application wrote as ``async def``
(a notifier, a user directory) runs on it too, where its own connections live, while the
worker waits for the result.

kioku's workers are a pool of their own: an embedder without native async support falls
back (in LangChain) to the loop's default executor, which a pool shared with kioku's
waiting workers could leave without a free thread.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar, cast

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

T = TypeVar("T")

WORKERS = 32
"""Threads doing kioku's blocking work for async callers (the database pool bounds what
runs at once)."""
_pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="kioku")
_CALLER_LOOP: contextvars.ContextVar[asyncio.AbstractEventLoop | None] = contextvars.ContextVar(
    "kioku_caller_loop", default=None
)


async def off_loop(function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``function(*args, **kwargs)`` in a kioku worker thread (context variables copied)."""
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    context.run(_CALLER_LOOP.set, loop)  # for the worker only, not left in the caller
    return await loop.run_in_executor(_pool, partial(context.run, function, *args, **kwargs))


def _caller_loop() -> asyncio.AbstractEventLoop | None:
    """The event loop this worker works for, when it runs for one and is not on it."""
    loop = _CALLER_LOOP.get()
    if loop is None or not loop.is_running():
        return None
    try:
        on_loop = asyncio.get_running_loop() is loop
    except RuntimeError:
        on_loop = False
    return None if on_loop else loop


async def _awaiting(make: Callable[[], Awaitable[T]]) -> T:
    return await make()


def _awaited(call: Callable[[], T], acall: Callable[[], Awaitable[T]]) -> T:
    """``call()``, or ``acall()`` awaited on the caller's loop when working for one."""
    loop = _caller_loop()
    if loop is None:
        return call()
    return asyncio.run_coroutine_threadsafe(_awaiting(acall), loop).result()


def resolved(value: T | Awaitable[T]) -> T:
    """``value``, or what it resolves to when a callback returned an awaitable.

    Awaited on the caller's loop when kioku runs in a worker thread for it, else on a
    loop of its own (a sync caller).
    """
    if not inspect.isawaitable(value):
        return value
    awaitable = cast(Awaitable[T], value)
    return _awaited(lambda: asyncio.run(_awaiting(lambda: awaitable)), lambda: awaitable)


def embed_documents(embeddings: Embeddings, texts: list[str]) -> list[list[float]]:
    """``embed_documents``, or ``aembed_documents`` awaited on the caller's loop."""
    return _awaited(
        partial(embeddings.embed_documents, texts), partial(embeddings.aembed_documents, texts)
    )


def embed_query(embeddings: Embeddings, text: str) -> list[float]:
    """``embed_query``, or ``aembed_query`` awaited on the caller's loop."""
    return _awaited(partial(embeddings.embed_query, text), partial(embeddings.aembed_query, text))
