"""The ``create_memory`` flow: a typed memory (reference argument names), server-wide scope.

The scope comes from the turn context (server or DM key, active lineage), never from the
model; the model's ``embedding`` argument is accepted and ignored (the store embeds).
"""

from __future__ import annotations

from kioku.memory.arguments import ArgumentError, reject_unknown
from kioku.memory.create import STATUSES, checked_content, save
from kioku.memory.flow import FlowCall, require_context, settings_first, tool_flow
from kioku.memory.repository import ServerScope
from kioku.memory.results import ToolResult
from kioku.memory.typed import parse_typed
from kioku.stm.model import utc_now

ARGUMENTS = frozenset({"type", "content", "importance", "metadata", "embedding"})


def _create_typed(call: FlowCall) -> ToolResult:
    arguments = call.arguments
    reject_unknown(arguments, ARGUMENTS)
    content = arguments.get("content")
    if not isinstance(content, str) or not content.strip():
        raise ArgumentError("content is required: the text of the memory")
    embedding = arguments.get("embedding")
    if embedding is not None and not isinstance(embedding, list):
        raise ArgumentError("embedding, if given, must be a list of numbers (it is ignored)")
    context = require_context(call, STATUSES)
    with settings_first(call, context, STATUSES):
        content = checked_content(call, context, content, field="content")
        typed = parse_typed(
            arguments.get("type"),
            arguments.get("importance"),
            arguments.get("metadata"),
            content=content,
            now=utc_now(),
        )
    scope = ServerScope(context.memory_server_key, context.persona.lineage_id)
    result = save(call, context, scope, None, content, typed)
    if embedding is not None:
        return ToolResult(result.status, result.reason, {**result.data, "embedding_ignored": True})
    return result


create_memory = tool_flow("create_memory", STATUSES, _create_typed)
"""Validate and save one typed memory in the turn's server scope; never raises."""
