"""What the create and update flows share: the error boundary, settings and resolution."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from toolkit.accounts import AccountRepository, ServerSettings
from toolkit.context import PrivacyLevel, TurnContext
from toolkit.db.errors import StorageError, storage_errors
from toolkit.memory.arguments import ArgumentError
from toolkit.memory.notices import MemoryNotice, emit_notice
from toolkit.memory.resolution import (
    NotFound,
    Person,
    Resolution,
    Resolved,
    match_directory,
    match_participants,
)
from toolkit.memory.results import ToolResult
from toolkit.memory.text import normalise_name
from toolkit.store import KiokuStore

logger = logging.getLogger("toolkit.memory")

SELF_NAMES = frozenset({"self", "yourself", "me (the bot)"})


@dataclass(frozen=True, slots=True)
class FailureStatuses:
    """The statuses a flow's boundary reports for each kind of failure."""

    invalid_args: str
    internal_error: str
    db_error: str


class FlowFailure(Exception):
    """Ends a flow early with a result for the model."""

    def __init__(self, result: ToolResult) -> None:
        super().__init__(result.status)
        self.result = result


def fail(status: str, reason: str, **data: Any) -> FlowFailure:
    """Build a :class:`FlowFailure` to ``raise``."""
    return FlowFailure(ToolResult(status, reason, data))


def run_flow(
    operation: str, statuses: FailureStatuses, body: Callable[[], ToolResult]
) -> ToolResult:
    """Run ``body`` and map every way it can fail onto a status; never raises."""
    try:
        with storage_errors(operation):
            return body()
    except FlowFailure as failure:
        return failure.result
    except ArgumentError as exc:
        return ToolResult(statuses.invalid_args, str(exc))
    except StorageError as exc:
        return ToolResult(
            statuses.db_error,
            f"The memory database is unavailable ({exc}). Nothing was changed; "
            "tell the user and try again later.",
        )
    except Exception:
        logger.exception("kioku: unexpected error in %s", operation)
        return ToolResult(
            statuses.internal_error, "An internal error occurred; nothing was changed."
        )


def require_context(context: object, status: str) -> TurnContext:
    """Return the turn context or fail with ``status`` when it is missing or incomplete."""
    if not isinstance(context, TurnContext):
        raise fail(status, "No turn context was provided to the memory tool (a setup problem).")
    if not context.channel_id or not context.user.user_id or not context.persona.name:
        raise fail(status, "The turn context lacks the channel, user or persona (a setup problem).")
    return context


def server_settings(session: Session, context: TurnContext) -> ServerSettings:
    """Per-server settings of the turn's server (or DM key)."""
    return AccountRepository(session).server_settings(
        context.memory_server_key, is_dm=context.is_dm
    )


def resolve_person(
    store: KiokuStore, session: Session, context: TurnContext, name: str
) -> Resolution:
    """Resolve a model-supplied name to a person (SPEC §6); ``self`` is the bot."""
    key = normalise_name(name)
    bot = Person(context.bot_user_id, context.persona.name, PrivacyLevel.MINIMAL, False, True)
    if key in SELF_NAMES:
        return Resolved(bot)
    found = match_participants(key, context.all_participants(), context.bot_user_id)
    if isinstance(found, NotFound) and context.server_id is not None:
        members = store.directory_for(session).find_members(context.server_id, key)
        found = match_directory(key, members, context.bot_user_id)
    if isinstance(found, NotFound) and key == normalise_name(context.persona.name):
        return Resolved(bot)
    return found


def is_current_member(
    store: KiokuStore, session: Session, context: TurnContext, user_id: str
) -> bool:
    """Whether the owner of a personal memory may be addressed from this conversation."""
    if context.server_id is None:
        return user_id == context.user.user_id
    if any(p.user_id == user_id for p in context.all_participants()):
        return True
    return store.directory_for(session).is_member(context.server_id, user_id)


def notify(
    notice: MemoryNotice, context: TurnContext, stream_writer: Callable[[Any], None] | None
) -> None:
    """Emit a notice after commit; never changes the tool's result."""
    emit_notice(notice, stream_writer=stream_writer, notifier=context.notifier)
