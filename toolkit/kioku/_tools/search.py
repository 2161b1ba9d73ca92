"""``search_long_term_memory``: hybrid search over what this turn may see (issue #5)."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any, Self

from langchain_core.tools import StructuredTool
from langgraph.prebuilt import ToolRuntime
from pydantic import AfterValidator, BeforeValidator, ConfigDict, Field, model_validator
from sqlalchemy import text
from sqlalchemy.orm import Session

from kioku._accounts import (
    SETTINGS_SOURCE,
    AccountRepository,
    settings_from_row,
    settings_params,
)
from kioku._calibration import relevance_floor
from kioku._context import TurnContext, turn_context_of
from kioku._context_build.mentions import convert_mentions
from kioku._db.errors import StorageError, storage_errors
from kioku._db.vectors import RECORDED_EMBEDDER_SQL, readable_embedder
from kioku._deps import HasDeps, KiokuDeps
from kioku._domain.settings import ServerSettings
from kioku._domain.statuses import SearchStatus
from kioku._domain.visibility import Visibility
from kioku._memory.arguments import (
    ArgumentError,
    Form,
    Moment,
    ToolArguments,
    check_storable,
    validated,
)
from kioku._memory.text import as_data, echo
from kioku._memory.typed import MEMORY_TYPES
from kioku._memory.typed_arguments import MemoryType
from kioku._memory.when import when_label
from kioku._reach import reach_of
from kioku._recorded_embedder import again_by_text, noted, query_embedding, vectors_usable
from kioku._search.engine import rank_candidates
from kioku._search.rows import SearchHit
from kioku._search.when import narrowing, time_phrase
from kioku._stm.model import utc_now
from kioku._tools.safe import ArgumentSafeTool
from kioku._tools.schema import model_facing_schema

logger = logging.getLogger(__name__)

MAX_LIMIT = 20
DEFAULT_LIMIT = 5
"""Memories a search returns when the model gives no ``limit``."""
MAX_QUERY_LENGTH = 1000


DESCRIPTION = (
    "Search your long-term memories (server-wide ones and those about the people in this "
    "conversation) for facts relevant to a question. Use it when your context says more "
    "memories exist than are shown, or when you need something specific. Returns the best "
    "matches as 'ID:N content'."
)


def visibility_for(session: Session, context: TurnContext) -> Visibility:
    """What the turn may read (:mod:`kioku._reach`), with the server's settings."""
    return _visibility(context, AccountRepository(session).settings_for(context))


def _visibility(context: TurnContext, settings: ServerSettings) -> Visibility:
    return reach_of(
        context, personal_memories_enabled=settings.personal_memories_enabled
    ).visibility()


_SETTINGS_AND_EMBEDDER = text(
    f"SELECT s.*, {RECORDED_EMBEDDER_SQL} AS embedder FROM {SETTINGS_SOURCE} AS s"
)


def _search_visibility(session: Session, deps: KiokuDeps, context: TurnContext) -> Visibility:
    """:func:`visibility_for`, noting the embedder the database records in the same read.

    A worker that only searches learns of ``kioku reembed`` here, as a context build does.
    """
    read_at = time.monotonic()
    row = session.execute(
        _SETTINGS_AND_EMBEDDER, settings_params(context.memory_server_key, context.is_dm)
    ).one()
    noted(deps, readable_embedder(row.embedder), read_at)
    return _visibility(context, settings_from_row(row))


def render_hit(hit: SearchHit, context: TurnContext, now: datetime) -> str:
    """``ID:N (when) content`` with names rendered as in the context blocks (one line)."""
    names = {p.user_id: p.display_name for p in context.all_participants()}
    owner = names.get(hit.user_id or "", "User") if hit.scope == "personal" else "User"
    text = convert_mentions(
        hit.content, user_name=owner, bot_name=context.persona.name, names_by_id=names
    )
    return f"ID:{hit.id} ({when_label(hit.happened_at, now)}) {as_data(text)}"


def _query(value: str) -> str:
    if not value.strip():
        raise ArgumentError(QUERY_FORM)
    return check_storable("query", value).strip()


def _limit(value: Any) -> Any:
    return DEFAULT_LIMIT if value is None else value  # null, as models send for "omitted"


QUERY_FORM = "query is required: a few words describing what to find"


class SearchArgs(ToolArguments):
    """Validated search arguments."""

    model_config = ConfigDict(title="search_long_term_memory")

    query: Annotated[
        str,
        Field(max_length=MAX_QUERY_LENGTH, description="What to look for, in plain words."),
        AfterValidator(_query),
        Form(QUERY_FORM),
    ]
    memory_type: Annotated[
        MemoryType | None,
        Field(description="Only memories of this type (optional)."),
        Form(f"memory_type must be one of {', '.join(MEMORY_TYPES)}, or omitted"),
    ] = None
    min_importance: Annotated[
        float | None,
        Field(
            ge=0,
            le=1,
            allow_inf_nan=False,
            description="Only memories at least this important, 0 to 1 (optional).",
        ),
        Form("min_importance must be a number from 0 to 1, or omitted"),
    ] = None
    limit: Annotated[
        int,
        Field(
            ge=1,
            le=MAX_LIMIT,
            description=f"How many memories to return (default {DEFAULT_LIMIT}).",
        ),
        BeforeValidator(_limit),
        Form(f"limit must be a whole number from 1 to {MAX_LIMIT}, or omitted"),
    ] = DEFAULT_LIMIT
    since: Annotated[
        Moment,
        Field(
            description=(
                "Only memories of events on or after this ISO 8601 date or date-time (optional)."
            )
        ),
    ] = None
    until: Annotated[
        Moment,
        Field(description="Only memories of events before this ISO 8601 date or date-time."),
    ] = None

    @model_validator(mode="after")
    def _since_before_until(self) -> Self:
        if self.since is not None and self.until is not None and self.since >= self.until:
            raise ArgumentError(
                "since must be before until (until is not included: for one day, pass the next "
                "day as until)"
            )
        return self


def parse_search_args(arguments: Mapping[str, Any]) -> SearchArgs:
    """Validate the search arguments.

    Raises:
        ArgumentError: with a reason naming the argument.
    """
    return validated(SearchArgs, arguments)


def search_long_term_memory(
    store: HasDeps, context: object, arguments: dict[str, Any]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run one search; returns (payload for the model, records for the artifact)."""
    deps = store.deps
    if not isinstance(context, TurnContext):
        return {
            "status": SearchStatus.INTERNAL_ERROR,
            "reason": "No turn context (a setup problem).",
        }, []
    try:
        parsed = parse_search_args(arguments)
    except ArgumentError as exc:
        return {"status": SearchStatus.INVALID_ARGS, "reason": str(exc)}, []
    vector = query_embedding(deps, parsed.query)
    now = utc_now()
    try:
        hits = _hits(deps, context, parsed, vector, now)
    except StorageError as exc:
        return {
            "status": SearchStatus.DB_ERROR,
            "reason": f"The memory database is unavailable ({echo(str(exc), 300)}).",
        }, []
    except Exception:
        logger.exception("kioku: unexpected error in search_long_term_memory")
        return {"status": SearchStatus.INTERNAL_ERROR, "reason": "An internal error occurred."}, []
    deps.access.record(hit.id for hit in hits)
    if not hits:
        return {"status": SearchStatus.NONE, "reason": _nothing_found(parsed, now)}, []
    return (
        {"status": SearchStatus.FOUND, "memories": [render_hit(h, context, now) for h in hits]},
        [h.to_artifact() for h in hits],
    )


def _hits(
    deps: KiokuDeps,
    context: TurnContext,
    parsed: SearchArgs,
    vector: list[float] | None,
    now: datetime,
) -> list[SearchHit]:
    """The search's hits; by text alone when the database records another embedder.

    Learnt from the settings' read, or from ``vector`` meeting a column of another size.
    """

    def ranked() -> list[SearchHit]:
        # Reads only, each statement on its own: no BEGIN, and no ROLLBACK, after which
        # psycopg would drop the connection's prepared statements.
        with deps.reads() as session:
            visibility = _search_visibility(session, deps, context)
            return rank_candidates(
                session,
                visibility,
                parsed.query,
                vector if vectors_usable(deps) else None,
                now=now,
                memory_type=parsed.memory_type,
                min_importance=parsed.min_importance,
                since=parsed.since,
                until=parsed.until,
                limit=parsed.limit,
                aids=deps.search_aids,
                floor=relevance_floor(
                    deps.embedder.model, deps.settings.relevance_similarity
                ),
            ).hits()

    with storage_errors("search_long_term_memory"):
        return again_by_text(deps, ranked)


def search_long_term_memory_tool(store: HasDeps) -> StructuredTool:
    """Build the search tool (``response_format="content_and_artifact"``)."""

    def run(
        runtime: ToolRuntime | None = None, **arguments: Any
    ) -> tuple[str, list[dict[str, Any]]]:
        context = turn_context_of(runtime.context) if runtime is not None else None
        payload, artifact = search_long_term_memory(store.deps, context, arguments)
        return json.dumps(payload, ensure_ascii=False), artifact

    return ArgumentSafeTool.from_function(
        func=run,
        name="search_long_term_memory",
        description=DESCRIPTION,
        args_schema=model_facing_schema(SearchArgs),
        infer_schema=False,
        response_format="content_and_artifact",
    )


def _nothing_found(parsed: SearchArgs, now: datetime) -> str:
    """Why a search found nothing, naming the filters that narrowed it."""
    narrowed = narrowing(time_phrase(parsed.query, now), parsed.since, parsed.until)
    if narrowed is not None:
        since, until = narrowed.since.date(), narrowed.until.date()
        return (
            f"Nothing in memory happened from {since} until {until} (not included): the "
            "time the query names."
        )
    filters = [
        f"{name} {value}"
        for name, value in (
            ("memory_type", parsed.memory_type),
            ("min_importance", parsed.min_importance),
            ("since", parsed.since.isoformat() if parsed.since else None),
            ("until", parsed.until.isoformat() if parsed.until else None),
        )
        if value is not None
    ]
    if not filters:
        return "Nothing in memory is about that query."
    return (
        f"Nothing in memory is about that query with {', '.join(filters)}; without them it "
        "might find something."
    )
