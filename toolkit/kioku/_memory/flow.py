"""What the create and update flows share.

The call, the error boundary, the opening checks, target resolution and notices.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol, TypeVar

from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError, SQLAlchemyError
from sqlalchemy.orm import Session

from kioku._accounts import AccountRepository
from kioku._awaiting import embed_documents, resolved
from kioku._context import PrivacyLevel, TurnContext
from kioku._db.errors import StorageError, storage_errors
from kioku._deps import HasDeps, KiokuDeps
from kioku._domain.settings import ServerSettings
from kioku._embeddings import embedding_text
from kioku._memory.arguments import ArgumentError
from kioku._memory.notices import MemoryNotice, emit_notice
from kioku._memory.resolution import (
    Ambiguous,
    NotFound,
    Person,
    Resolution,
    Resolved,
    match_directory,
    match_participants,
)
from kioku._memory.results import ToolResult
from kioku._memory.text import echo, normalise_name, unstorable
from kioku._memory.write_decision import Refusal, decide
from kioku._recorded_embedder import again_by_text, vectors_usable

logger = logging.getLogger("kioku._memory")

SELF_NAMES = frozenset({"self", "yourself"})
HALF_MAX = 65504.0
"""The largest magnitude the ``halfvec`` column stores."""
StreamWriter = Callable[[Any], None]
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class FlowStatuses:
    """The statuses a flow reports for the failures every flow shares."""

    invalid_args: str
    disabled: str
    internal_error: str
    db_error: str
    ambiguous_user: str
    user_not_found: str


@dataclass(frozen=True, slots=True)
class FlowCall:
    """One tool call: the unit of work's session and what the call brought."""

    session: Session
    deps: KiokuDeps
    raw_context: object
    arguments: Mapping[str, Any]
    stream_writer: StreamWriter | None


class Flow(Protocol):
    """A tool flow: one unit of work in the session it is given; never raises."""

    def __call__(
        self,
        session: Session,
        store: HasDeps,
        context: object,
        arguments: Mapping[str, Any],
        *,
        stream_writer: StreamWriter | None = None,
    ) -> ToolResult:
        """Run the flow for one tool call."""
        ...


class FlowFailure(Exception):
    """Ends a flow early with a result for the model."""

    def __init__(self, result: ToolResult) -> None:
        super().__init__(result.status)
        self.result = result


def fail(status: str, reason: str, **data: Any) -> FlowFailure:
    """Build a :class:`FlowFailure` to ``raise``."""
    return FlowFailure(ToolResult(status, reason, data))


def tool_flow(
    operation: str, statuses: FlowStatuses, body: Callable[[FlowCall], ToolResult]
) -> Flow:
    """Turn ``body`` into a :class:`Flow` that maps every failure onto a status."""

    def flow(
        session: Session,
        store: HasDeps,
        context: object,
        arguments: Mapping[str, Any],
        *,
        stream_writer: StreamWriter | None = None,
    ) -> ToolResult:
        call = FlowCall(session, store.deps, context, arguments, stream_writer)
        try:
            with storage_errors(operation):
                # A vector of another size (a re-embed switched): the call runs again,
                # undone first, its memory queued (embed_or_queue).
                return again_by_text(call.deps, partial(body, call), partial(undo_refused, session))
        except FlowFailure as failure:
            undo_refused(session)
            return failure.result
        except ArgumentError as exc:
            undo_refused(session)
            return ToolResult(statuses.invalid_args, str(exc))
        except StorageError as exc:
            return ToolResult(
                statuses.db_error,
                f"The memory database is unavailable ({echo(str(exc), 300)}). Nothing was changed; "
                "tell the user and try again later.",
            )
        except Exception:
            logger.exception("kioku: unexpected error in %s", operation)
            return ToolResult(
                statuses.internal_error, "An internal error occurred; nothing was changed."
            )

    flow.__name__ = flow.__qualname__ = operation
    return flow


def undo_refused(session: Session) -> None:
    """End a refused call's unit of work undone.

    A rollback that fails is left to the session's end, which tries again.
    """
    if not session.in_transaction():
        return
    try:
        session.rollback()
    except SQLAlchemyError:
        logger.debug("kioku: rolling back a refused call failed; the session's end retries")


UNKNOWN_OUTCOME = (
    "The memory database became unavailable after the change was sent, so whether it took "
    "effect is unknown. Check first (search your memories) before trying again."
)
CHECKED_NOTHING_CHANGED = (
    "The database connection broke while saving; checked afterwards, nothing was changed. "
    "Tell the user and try again later."
)
LOST_CONNECTION_STATES = frozenset({"57P01", "57P02", "57P03"})
"""Administrator, crash and startup shutdowns: the server went away mid-statement."""
CONFIRM_ATTEMPTS = (0.0, 1.0, 3.0)
"""Pauses before each attempt to find out what a write whose reply was lost did."""


def connection_lost(exc: BaseException) -> bool:
    """Whether ``exc`` means the connection failed, so a write sent on it may have happened.

    Errors the server answered (a statement timeout, a constraint) are not: the server
    said the statement failed, so it changed nothing.
    """
    if not isinstance(exc, DBAPIError):
        return False
    if exc.connection_invalidated:
        return True
    sqlstate = getattr(exc.orig, "sqlstate", None)
    if sqlstate is None:
        return isinstance(exc, (OperationalError, InterfaceError))
    return sqlstate.startswith("08") or sqlstate in LOST_CONNECTION_STATES


def confirm_outcome(
    call: FlowCall, statuses: FlowStatuses, check: Callable[[Session], R | None]
) -> R:
    """What a write whose reply was lost did, found out on a fresh connection.

    ``check`` looks (or idempotently retries) and returns the outcome, or ``None`` when the
    write did not happen. When the database cannot be asked, the answer says the outcome is
    unknown, never that nothing changed.
    """
    for pause in CONFIRM_ATTEMPTS:
        time.sleep(pause)
        try:
            with call.deps.sessions() as session:
                outcome = check(session)
                session.commit()
        except SQLAlchemyError as exc:
            logger.warning("kioku: could not yet confirm a write after a lost reply: %s", exc)
            continue
        if outcome is None:
            raise fail(statuses.db_error, CHECKED_NOTHING_CHANGED)
        return outcome
    raise fail(statuses.db_error, UNKNOWN_OUTCOME, outcome_unknown=True)


def on_its_own(session: Session) -> None:
    """Send the unit of work's next statement on its own, when nothing was read in it yet.

    For a write that is atomic as one statement: no BEGIN or COMMIT round trips.
    """
    if not session.in_transaction():
        session.connection(execution_options={"isolation_level": "AUTOCOMMIT"})


def commit_or_confirm(
    call: FlowCall, statuses: FlowStatuses, applied: Callable[[Session], bool]
) -> bool:
    """Commit the unit of work; if the reply to COMMIT is lost, check it with ``applied``.

    Returns whether the commit was answered (``False``: confirmed by the check instead).
    """
    try:
        call.session.commit()
    except SQLAlchemyError as exc:
        if not connection_lost(exc):
            raise
        logger.warning("kioku: the reply to a commit was lost (%s); checking", exc)
        confirm_outcome(call, statuses, lambda session: True if applied(session) else None)
        return False
    return True


def open_turn(call: FlowCall, statuses: FlowStatuses) -> tuple[TurnContext, ServerSettings]:
    """The turn context and server settings, once the write decision allows writing at all."""
    context = require_context(call, statuses)
    settings = _settings(call, context)
    if decide(None, settings, context).refusal is Refusal.DISABLED:
        raise disabled(statuses)
    return context, settings


def require_context(call: FlowCall, statuses: FlowStatuses) -> TurnContext:
    """The call's turn context, complete enough to write with (a setup problem otherwise).

    SPEC §3 answers a disabled server before a missing context: when the context names
    its server (or direct-message channel), its settings are read to find out.
    """
    context = call.raw_context
    if not isinstance(context, TurnContext):
        raise fail(
            statuses.internal_error,
            "No turn context was provided to the memory tool (a setup problem).",
        )
    if not context.channel_id or not context.user.user_id or not context.persona.name:
        if _disabled_here(call, context):
            raise disabled(statuses)
        raise fail(
            statuses.internal_error,
            "The turn context lacks the channel, user or persona (a setup problem).",
        )
    return context


def _disabled_here(call: FlowCall, context: TurnContext) -> bool:
    """Whether the context's server (or DM) is known and has self-teaching off."""
    if context.server_id is None and not context.channel_id:
        return False
    return decide(None, _settings(call, context), context).refusal is Refusal.DISABLED


@contextmanager
def settings_first(call: FlowCall, context: TurnContext, statuses: FlowStatuses) -> Iterator[None]:
    """Let a disabled server's answer win over the failures of the checks inside.

    For flows that read the settings with their write: the settings are read here only
    when a check fails, so the spec's order holds without a read on the successful path;
    the write decision (:func:`kioku._memory.write_decision.decide`) says which answer wins.
    """
    try:
        yield
    except (FlowFailure, ArgumentError):
        if decide(None, _settings(call, context), context).refusal is Refusal.DISABLED:
            raise disabled(statuses) from None
        raise


def disabled(statuses: FlowStatuses) -> FlowFailure:
    """The failure of a write where self-teaching is off."""
    return fail(
        statuses.disabled,
        "Self-teaching is turned off here, so long-term memories cannot be saved or "
        "changed. A server admin can enable it.",
    )


def _settings(call: FlowCall, context: TurnContext) -> ServerSettings:
    return AccountRepository(call.session).settings_for(context)


def resolve_or_fail(
    call: FlowCall, context: TurnContext, name: str, statuses: FlowStatuses
) -> Person:
    """The one person ``name`` refers to; ambiguous or unknown names end the flow."""
    found = resolve_person(call.deps, call.session, context, name)
    if isinstance(found, Ambiguous):
        raise fail(
            statuses.ambiguous_user,
            f"'{echo(name)}' matches several people: {', '.join(found.candidates)}. "
            "Use the exact name shown in the conversation.",
            candidates=list(found.candidates),
        )
    if isinstance(found, NotFound):
        raise fail(
            statuses.user_not_found,
            f"Nobody called '{echo(name)}' is in this conversation or server. "
            "Use the name as shown in the conversation.",
        )
    return found.person


def resolve_person(
    deps: KiokuDeps, session: Session, context: TurnContext, name: str
) -> Resolution:
    """Resolve a model-supplied name to a person (SPEC §6).

    A person called by the name wins over the bot: ``self`` (or the persona's name) is the
    bot only when no participant or directory member is called that, so a personal fact
    about someone named "Self" is never saved server-wide. A name no database can hold
    (a NUL) is nobody's, found without asking the directory.
    """
    key = normalise_name(name)
    if unstorable(key) is not None:
        return NotFound()
    found = match_participants(key, context.all_participants(), context.bot_user_id)
    if isinstance(found, NotFound) and context.server_id is not None:
        members = resolved(deps.directory_for(session).find_members(context.server_id, key))
        found = match_directory(key, members, context.bot_user_id)
    if isinstance(found, NotFound) and key in {*SELF_NAMES, normalise_name(context.persona.name)}:
        bot = Person(context.bot_user_id, context.persona.name, PrivacyLevel.MINIMAL, False, True)
        return Resolved(bot)
    return found


def embed_or_queue(deps: KiokuDeps, content: str) -> list[float] | None:
    """The content's embedding, or ``None`` (saved without one, queued) when the embedder fails.

    ``None`` too while the database records another embedder (``kioku reembed`` switched
    it while this process ran): :mod:`kioku._recorded_embedder`.
    """
    if not vectors_usable(deps):
        return None
    spec = deps.embedder
    try:
        [vector] = embed_documents(spec.embeddings, [embedding_text(content)])
    except Exception as exc:
        logger.warning("kioku: embedding failed (%s); the memory is queued for re-embedding", exc)
        return None
    if len(vector) != spec.dimension:
        logger.warning(
            "kioku: %s returned %d dimensions, expected %d; queued for re-embedding",
            spec.model,
            len(vector),
            spec.dimension,
        )
        return None
    vector = [float(x) for x in vector]  # an embedder may return numpy scalars
    if not all(map(HALF_MAX.__ge__, map(abs, vector))):  # also false for NaN
        logger.warning(
            "kioku: %s returned values a half-precision vector cannot hold (NaN or beyond "
            "±%g); queued for re-embedding",
            spec.model,
            HALF_MAX,
        )
        return None
    return vector


def notify(notice: MemoryNotice, context: TurnContext, call: FlowCall) -> None:
    """Emit a notice after commit; never changes the tool's result."""
    emit_notice(notice, stream_writer=call.stream_writer, notifier=context.notifier)
