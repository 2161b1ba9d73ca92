"""The ``create_memory`` flow: a typed memory (reference argument names), server-wide scope.

The scope comes from the turn context (server or DM key, active lineage), never from the
model; the model's ``embedding`` argument is accepted and ignored (the store embeds).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from kioku._domain.scopes import ServerScope
from kioku._memory.arguments import ArgumentError, parse_time, reject_unknown
from kioku._memory.create import STATUSES, checked_content, save
from kioku._memory.flow import FlowCall, require_context, settings_first, tool_flow
from kioku._memory.results import ToolResult
from kioku._memory.typed import parse_typed
from kioku._stm.model import utc_now

ARGUMENTS = frozenset(
    {"memory_type", "memory_content", "importance", "metadata", "embedding", "event_time"}
)
LEGACY_NAMES = {"type": "memory_type", "content": "memory_content"}
"""The typed-memory reference's argument names, still accepted (not advertised)."""


def _named(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """``arguments`` with legacy names replaced by the advertised ones."""
    named = dict(arguments)
    for legacy, name in LEGACY_NAMES.items():
        if legacy in named:
            value = named.pop(legacy)
            if name in named and named[name] != value:
                raise ArgumentError(f"pass {name} only (not also {legacy}, its older name)")
            named.setdefault(name, value)
    return named


def _create_typed(call: FlowCall) -> ToolResult:
    arguments = _named(call.arguments)
    reject_unknown(arguments, ARGUMENTS)
    content = arguments.get("memory_content")
    if not isinstance(content, str) or not content.strip():
        raise ArgumentError("memory_content is required: the text of the memory")
    event_time = arguments.get("event_time")
    when = parse_time(event_time, "event_time").isoformat() if event_time is not None else None
    embedding = arguments.get("embedding")
    if embedding is not None and not isinstance(embedding, list):
        raise ArgumentError("embedding, if given, must be a list of numbers (it is ignored)")
    context = require_context(call, STATUSES)
    sent = context.message_time_utc()
    with settings_first(call, context, STATUSES):
        content = checked_content(call, context, content, field="memory_content")
        typed = parse_typed(
            arguments.get("memory_type"),
            arguments.get("importance"),
            arguments.get("metadata"),
            content=content,
            now=sent or utc_now(),
        )
    if when is not None:
        typed = replace(typed, attributes={**typed.attributes, "event_time": when})
    scope = ServerScope(context.memory_server_key, context.persona.lineage_id)
    result = save(call, context, scope, None, content, typed)
    if embedding is not None:
        return ToolResult(result.status, result.reason, {**result.data, "embedding_ignored": True})
    return result


create_memory = tool_flow("create_memory", STATUSES, _create_typed)
"""Validate and save one typed memory in the turn's server scope; never raises."""
