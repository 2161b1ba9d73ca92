"""NaN and Infinity in MCP tool arguments, caught before the SDK turns them into ``null``.

Both transports parse a request with Python's JSON parsers, which accept the non-standard
``NaN``, ``Infinity`` and ``-Infinity``; the SDK's session then re-validates each request
from ``model_dump(mode="json")``, which writes a non-finite float as ``null``, so a tool
would see ``importance: null`` (its default) where the client sent ``NaN``. The server's
read stream passes through :func:`run_marking_non_finite`, which sees each request as the
transport parsed it and notes the first non-finite number of a ``tools/call`` in the
request's ``_meta`` (under :data:`NON_FINITE`), which the re-validation keeps; the tool
call then answers the tool's ``…_invalid_args`` status.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.lowlevel import Server
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCRequest

NON_FINITE = "kioku/non-finite-argument"
"""``_meta`` key of a ``tools/call`` request: where its arguments hold NaN or Infinity
(e.g. ``importance is NaN``). Set by this server alone: a client's own value is dropped."""

Incoming = SessionMessage | Exception
"""What a transport hands the SDK's session."""
Run = Callable[..., Awaitable[Any]]
"""The SDK's ``Server.run(read_stream, write_stream, options, …)``."""


def non_finite_number(arguments: object) -> str | None:
    """Where ``arguments`` first holds NaN or an infinity (``metadata.score is NaN``), if anywhere.

    Walked without recursion: the transports accept JSON nested deeper than Python recurses.
    """
    if not isinstance(arguments, dict):
        return None
    stack: list[tuple[str, object]] = [(str(k), v) for k, v in reversed(arguments.items())]
    while stack:
        path, value = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            return f"{path} is {_json_name(value)}"
        if isinstance(value, dict):
            stack.extend((f"{path}.{k}", v) for k, v in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend((f"{path}[{i}]", v) for i, v in reversed(list(enumerate(value))))
    return None


def _json_name(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


def mark_non_finite(message: Incoming) -> Incoming:
    """``message``, a ``tools/call`` with NaN or Infinity in its arguments noted in ``_meta``."""
    if isinstance(message, Exception):
        return message
    request = message.message.root
    if not isinstance(request, JSONRPCRequest) or request.method != "tools/call":
        return message
    params = request.params
    if params is None:
        return message
    meta = params.get("_meta")
    if isinstance(meta, dict):
        meta.pop(NON_FINITE, None)
    found = non_finite_number(params.get("arguments"))
    if found is not None and meta is None:
        params["_meta"] = {NON_FINITE: found}
    elif found is not None and isinstance(meta, dict):
        meta[NON_FINITE] = found
    return message


async def run_marking_non_finite(
    run: Run,
    read_stream: MemoryObjectReceiveStream[Incoming],
    write_stream: MemoryObjectSendStream[SessionMessage],
    *args: Any,
    **kwargs: Any,
) -> None:
    """``run`` (the SDK's ``Server.run``) reading through :func:`mark_non_finite`."""
    send, receive = anyio.create_memory_object_stream[Incoming](0)

    async def forward() -> None:
        async with read_stream, send:
            async for message in read_stream:
                try:
                    await send.send(mark_non_finite(message))
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    return  # the session stopped reading

    async with anyio.create_task_group() as group:
        group.start_soon(forward)
        await run(receive, write_stream, *args, **kwargs)
        group.cancel_scope.cancel()


def notice_non_finite(server: Server[Any, Any]) -> None:
    """Have ``server`` (FastMCP's low-level one) note non-finite arguments of every request.

    Both transports (stdio, and each stateless HTTP request) call its ``run`` with the
    stream of parsed requests: the one place they pass before the SDK writes NaN as null.
    """
    server.run = partial(run_marking_non_finite, server.run)  # type: ignore[method-assign]


def non_finite_in(server: Server[Any, Any]) -> str | None:
    """Where the arguments of the request ``server`` is answering held NaN or Infinity.

    ``None`` when they held none, or outside a request (a call in-process).
    """
    try:
        meta = server.request_context.meta
    except LookupError:
        return None
    found = (meta.model_extra or {}).get(NON_FINITE) if meta is not None else None
    return found if isinstance(found, str) else None
