"""``update_short_term_memory`` as a LangChain ``StructuredTool`` (SPEC §7).

Silent: no notice. The per-turn flags (long-term intent, already updated) are read from
the graph state at execution, so a call that slips past the tool list is refused with a
reason and told not to retry.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any

import psycopg
from langchain_core.tools import StructuredTool
from langgraph.prebuilt import ToolRuntime
from pydantic import ConfigDict, Field
from sqlalchemy.exc import SQLAlchemyError

from kioku._context import NO_STM_PROVIDERS, TurnContext, turn_context_of
from kioku._domain.statuses import StmStatus
from kioku._memory.arguments import ArgumentError, Form, ToolArguments, validated
from kioku._memory.results import ToolResult
from kioku._memory.text import sanitise_content
from kioku._stm.availability import (
    private_recent,
    stm_tool_refusal,
    summary_claim_key,
    turn_flags,
)
from kioku._stm.store import ShortTermMemory
from kioku._tools.safe import ArgumentSafeTool
from kioku._tools.schema import model_facing_schema

logger = logging.getLogger(__name__)


DESCRIPTION = (
    "Replace the short-term memory of this conversation with a compact summary of what is "
    "going on (topic, decisions, open questions, who said what that matters). Call it "
    "silently after responding, when the topic changed or when asked to. Not for things "
    "the user asks you to remember long-term: use create_long_term_memory for those."
)


class StmArgs(ToolArguments):
    """Validated arguments of ``update_short_term_memory``."""

    model_config = ConfigDict(title="update_short_term_memory")

    summary: Annotated[
        str,
        Field(description="The new summary of the ongoing conversation, a few sentences."),
        Form("summary is required: the summary text (a string)"),
    ]


def update_short_term_memory(
    stm: ShortTermMemory,
    context: object,
    state: object,
    arguments: dict[str, Any],
    *,
    no_stm_providers: frozenset[str] = NO_STM_PROVIDERS,
) -> ToolResult:
    """Validate, re-check availability (flags from graph ``state``) and write; never raises."""
    if not isinstance(context, TurnContext):
        return ToolResult(
            StmStatus.INTERNAL_ERROR, "No turn context was provided (a setup problem)."
        )
    intent, updated = turn_flags(state)
    refusal = stm_tool_refusal(
        context,
        ltm_intent=intent,
        already_updated=updated,
        no_stm_providers=no_stm_providers,
        private_recent=private_recent(state),
    )
    if refusal is not None:
        return ToolResult(StmStatus.REFUSED, f"{refusal} Do not call this tool again this turn.")
    try:
        summary = sanitise_content(validated(StmArgs, arguments).summary)
    except ArgumentError as exc:
        return ToolResult(StmStatus.INVALID_ARGS, str(exc))
    if not summary:
        return ToolResult(StmStatus.INVALID_ARGS, "summary is blank; write the summary text.")
    claim = summary_claim_key(context.turn_id, state)
    if not stm.claim_summary_turn(claim):
        return ToolResult(
            StmStatus.REFUSED,
            "Short-term memory was already updated this turn. Do not call this tool again "
            "this turn.",
        )
    try:
        stored = stm.write_summary(context, summary)
    except Exception as exc:
        stm.release_summary_turn(claim)
        if isinstance(exc, SQLAlchemyError | psycopg.Error):
            logger.error("kioku: database error during update_short_term_memory: %s", exc)
            return ToolResult(
                StmStatus.DB_ERROR,
                "The memory database is unavailable; the summary was not saved.",
            )
        logger.exception("kioku: unexpected error in update_short_term_memory")
        return ToolResult(
            StmStatus.INTERNAL_ERROR, "An internal error occurred; nothing was saved."
        )
    return ToolResult(
        StmStatus.UPDATED, "Short-term memory updated.", {"summary_length": len(stored)}
    )


def update_short_term_memory_tool(
    stm: ShortTermMemory, *, no_stm_providers: frozenset[str] = NO_STM_PROVIDERS
) -> StructuredTool:
    """Build the ``update_short_term_memory`` tool over ``stm``."""

    def run(runtime: ToolRuntime | None = None, **arguments: Any) -> str:
        context = turn_context_of(runtime.context) if runtime is not None else None
        state = runtime.state if runtime is not None else None
        return update_short_term_memory(
            stm, context, state, arguments, no_stm_providers=no_stm_providers
        ).to_json()

    return ArgumentSafeTool.from_function(
        func=run,
        name="update_short_term_memory",
        description=DESCRIPTION,
        args_schema=model_facing_schema(StmArgs),
        infer_schema=False,
    )
