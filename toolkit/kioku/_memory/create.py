"""The ``create_long_term_memory`` flow (SPEC §3), in the order the spec checks."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from sqlalchemy.exc import SQLAlchemyError

from kioku._accounts import AccountRepository
from kioku._context import TurnContext
from kioku._domain.scopes import PersonalScope, ServerScope
from kioku._domain.statuses import CreateStatus as S
from kioku._domain.writes import CreateOutcome, NewMemory
from kioku._memory.arguments import CreateArgs, parse_create_args
from kioku._memory.flow import (
    FlowCall,
    FlowFailure,
    FlowStatuses,
    confirm_outcome,
    connection_lost,
    disabled,
    embed_or_queue,
    fail,
    notify,
    on_its_own,
    require_context,
    resolve_or_fail,
    settings_first,
    tool_flow,
)
from kioku._memory.notices import MemoryNotice, NoticeScope, footer_for
from kioku._memory.repeats import refuse_repeat
from kioku._memory.repository import GLOBAL_LINEAGE, MemoryRepository
from kioku._memory.resolution import Person
from kioku._memory.results import ToolResult
from kioku._memory.text import (
    SHOWS_AS_NOTHING,
    ContentFault,
    check_content,
    name_key,
    render_tokens,
    with_bridge_name,
)
from kioku._memory.typed import TypedFields
from kioku._memory.write_decision import Decision, Write, decide
from kioku._reach import reach_of
from kioku._recorded_embedder import reread

logger = logging.getLogger("kioku._memory")

STATUSES = FlowStatuses(
    S.INVALID_ARGS, S.DISABLED, S.INTERNAL_ERROR, S.DB_ERROR, S.AMBIGUOUS_USER, S.USER_NOT_FOUND
)

LOST_REPLY_SAVED_HIDDEN = (
    "Saved. The database's reply was lost and the save was confirmed afterwards, so its id "
    "is not known here; nothing more is needed."
)
"""A confirmed create into a scope the turn cannot see: its id is withheld, since the row
found may be an earlier identical memory that no answer may confirm."""


def _create(call: FlowCall) -> ToolResult:
    args = parse_create_args(call.arguments)
    context = require_context(call, STATUSES)
    with settings_first(call, context, STATUSES):
        target, content, about = _resolve_target(call, context, args)
        content = checked_content(call, context, content, field="memory_content")
    scope: ServerScope | PersonalScope = (
        PersonalScope(target.user_id, context.persona.lineage_id)
        if target is not None
        else ServerScope(context.memory_server_key, context.persona.lineage_id)
    )
    typed = (
        TypedFields(attributes={"event_time": args.event_time.isoformat()})
        if args.event_time is not None
        else None
    )
    return save(call, context, scope, target, content, typed, about=about)


def checked_content(call: FlowCall, context: TurnContext, raw: str, *, field: str) -> str:
    """Sanitised content within the length limit, for a persona with a lineage."""
    max_length = call.deps.settings.max_memory_length
    checked = check_content(raw, max_length)
    if checked.fault is ContentFault.EMPTY:
        raise fail(S.INVALID_CONTENT, f"{field} is empty after removing invalid characters")
    if checked.fault is ContentFault.SHOWS_AS_NOTHING:
        raise fail(S.INVALID_CONTENT, f"{field} {SHOWS_AS_NOTHING}")
    if checked.fault is ContentFault.TOO_LONG:
        reason = checked.too_long(field, max_length)
        raise fail(S.INVALID_CONTENT, f"{reason}. Shorten it to the essential fact.")
    if context.persona.lineage_id <= GLOBAL_LINEAGE:
        raise fail(
            S.INTERNAL_ERROR,
            "The persona has no lineage (the database needs migrating); nothing was saved.",
        )
    return checked.text


def save(
    call: FlowCall,
    context: TurnContext,
    scope: ServerScope | PersonalScope,
    target: Person | None,
    content: str,
    typed: TypedFields | None = None,
    *,
    about: str | None = None,
) -> ToolResult:
    """Insert within the limit, commit, then invalidate the cache and emit the notice.

    Whether the write may happen is decided here (:mod:`kioku._memory.write_decision`), on
    the settings read with the scope's lock: SPEC §3 step 2 for a call that passed every
    other check (a failed check reads them in :func:`settings_first`).
    A memory without an ``event_time`` happened when the turn's message was sent, if the
    context knows (else when it is saved). ``about``: the bridged user it is about.
    """
    typed = typed or TypedFields()
    sent = context.message_time_utc()
    if sent is not None and "event_time" not in typed.attributes:
        typed = replace(typed, attributes={**typed.attributes, "event_time": sent.isoformat()})
    saved, decision, id_withheld = _insert(call, context, scope, target, content, typed, about)
    assert saved.memory_id is not None  # saved and already_saved carry the id
    record_id, personal_enabled = saved.memory_id, decision.personal_memories_enabled
    effective: NoticeScope = "target_user" if target is not None else "server_wide"
    data: dict[str, Any] = {"memory_id": record_id, "memory_scope": effective, "content": content}
    if target is not None:
        data["target_user"] = target.display_name
    if saved.outcome == "already_saved":
        kept = " (its type and metadata stay as they were saved)" if _typed(typed) else ""
        return ToolResult(
            S.SAVED,
            f"This exact memory is already saved as ID:{record_id}; nothing new was written{kept}.",
            {**data, "already_saved": True},
        )
    call.deps.windows.invalidate(scope)
    if _typed(typed):
        data.update(memory_type=typed.memory_type, importance=typed.importance)
    if "event_time" in typed.attributes:
        data["event_time"] = typed.attributes["event_time"]
    if id_withheld:  # no notice either: it would carry the id (the notifier, the stream)
        del data["memory_id"]
        return ToolResult(S.SAVED, LOST_REPLY_SAVED_HIDDEN, data)
    owner_name = target.display_name if target is not None else "User"
    persona_name = context.persona.name
    notify(
        MemoryNotice(
            kind="created",
            scope=effective,
            memory_id=record_id,
            content=render_tokens(content, user_name=owner_name, bot_name=persona_name),
            persona_name=persona_name,
            target_user=target.display_name if target is not None else None,
            footer=footer_for("created", effective, persona_name, record_id, personal_enabled),
        ),
        context,
        call,
    )
    return ToolResult(S.SAVED, f"Saved as ID:{record_id}.", data)


def _typed(typed: TypedFields) -> bool:
    """Whether a create carries a type or metadata (``create_memory``), not only a time."""
    return typed.memory_type != "semantic" or bool(set(typed.attributes) - {"event_time"})


create_long_term_memory = tool_flow("create_long_term_memory", STATUSES, _create)
"""Validate, resolve, check the limit and save one memory: one unit of work in ``session``.

Commits on success; never raises (every failure is a status and writes nothing).
"""


def _resolve_target(
    call: FlowCall, context: TurnContext, args: CreateArgs
) -> tuple[Person | None, str, str | None]:
    """Whom a create is for: the owner, the content, the bridged user it is about.

    The owner is ``None`` for a server-wide memory; the bridged user is ``None`` unless
    the memory is about one (saved server-wide under their name).

    Personal memories may only be about the conversation's participants (see
    :mod:`kioku._reach`), so nobody fills the quota of someone who is not there.
    """
    if args.scope == "server_wide" or args.target_user is None:
        return None, args.content, None
    person = resolve_or_fail(call, context, args.target_user, STATUSES)
    if person.is_bot:
        return None, args.content, None
    if person.is_bridge:
        # Tokens are normalised first, so {User} and {USER} name the bridged user too.
        return None, with_bridge_name(args.content, person.display_name), person.user_id
    if not reach_of(context).is_participant(person.user_id):
        raise fail(
            S.USER_NOT_FOUND,
            f"{person.display_name} is not taking part in this conversation; personal "
            "memories can only be saved about its participants. Nothing was saved.",
        )
    if not person.privacy.allows_personal_memories:
        raise fail(
            S.PRIVACY_RESTRICTED,
            f"{person.display_name}'s privacy settings do not allow personal memories. "
            "Do not save it elsewhere; they can change the setting themselves.",
        )
    return person, args.content, None


def _insert(
    call: FlowCall,
    context: TurnContext,
    scope: ServerScope | PersonalScope,
    target: Person | None,
    content: str,
    typed: TypedFields,
    about: str | None,
) -> tuple[CreateOutcome, Decision, bool]:
    """Save (committed) through the one-call create, or find the identical memory.

    A refusal of the write decision or a full scope ends the flow. The flag: the id must
    not be shown (a lost reply in a scope the turn cannot see, where the row found may be
    an earlier memory that no answer may confirm).
    """
    embedding = embed_or_queue(call.deps, content)  # before the write: the embedder may be slow
    decision = _decided(call, context, scope, compare=embedding is not None)
    # In a scope the turn cannot see, no answer may confirm what a memory says: neither a
    # refusal naming it nor "already saved" with its id; the create is a plain insert.
    if embedding is not None and decision.shown:
        refuse_repeat(call, context, scope, target, content, embedding, typed)
    owner_name = target.display_name if target is not None else None
    new = NewMemory(
        scope=scope,
        content=content,
        server_key=context.memory_server_key,
        server_name=context.server_name,
        limit=decision.limit,
        owner_name=owner_name,
        owner_key=name_key(owner_name),
        persona_id=context.persona.persona_id,
        created_by=context.user.user_id,
        embedding=embedding,
        embedder=call.deps.embedder.model,
        memory_type=typed.memory_type,
        importance=typed.importance,
        decay_rate=typed.decay_rate,
        attributes=typed.attributes,
        check_repeat=decision.shown,
        about_user_id=about,
    )
    saved, withheld = _written(call, new)
    if saved.vector_refused:  # saved queued: the database records another embedder now
        reread(call.deps)
    if saved.outcome == "limit_reached":
        raise _limit_reached(scope, target, saved.count, decision.limit)
    return saved, decision, withheld


def _decided(
    call: FlowCall, context: TurnContext, scope: ServerScope | PersonalScope, *, compare: bool
) -> Decision:
    """The write decision, on the server's settings read now; a refusal ends the flow.

    ``compare``: the new memory will be compared with the scope's, so the settings are read
    as the scope's write lock is taken, that of two writers saving the same fact at once
    the second compares with the first one's memory. Otherwise the create is atomic on its
    own, and so is this read.
    """
    if compare:
        settings = MemoryRepository(call.session).settings_locking(
            scope, context.memory_server_key, is_dm=context.is_dm
        )
    else:
        on_its_own(call.session)
        settings = AccountRepository(call.session).settings_for(context)
    defaults = call.deps.settings
    personal = isinstance(scope, PersonalScope)
    write = Write(
        "create",
        owner_id=scope.owner_id if personal else None,
        default_limit=defaults.max_personal_memories if personal else defaults.max_server_memories,
    )
    decision = decide(write, settings, context)
    if not decision.allowed:
        raise disabled(STATUSES)
    return decision


def _written(call: FlowCall, new: NewMemory) -> tuple[CreateOutcome, bool]:
    """Run the create and commit; after a lost reply, find out what it did.

    The flag: the id must not be shown (see :func:`_insert`).
    """
    call.session.connection()  # a failure to connect means nothing was sent
    try:
        saved = MemoryRepository(call.session).create_within_limit(new)
        call.session.commit()
    except SQLAlchemyError as exc:
        if not connection_lost(exc):
            raise
        # The create may have committed before the reply was lost. It is idempotent (an
        # identical memory answers already_saved), so running it again finds out.
        logger.warning("kioku: the reply to a create was lost (%s); checking", exc)
        retried = replace(new, check_repeat=True)  # finds this call's own row
        saved = confirm_outcome(
            call, STATUSES, lambda session: MemoryRepository(session).create_within_limit(retried)
        )
        if saved.outcome == "already_saved":
            # Almost surely the row this call committed before its reply was lost.
            saved = replace(saved, outcome="saved")
        return saved, not new.check_repeat and saved.outcome == "saved"
    return saved, False


def _limit_reached(
    scope: ServerScope | PersonalScope, target: Person | None, count: int | None, limit: int
) -> FlowFailure:
    """The refusal of a create into a full scope."""
    what = (
        f"personal memories for {target.display_name if target else 'this user'}"
        if isinstance(scope, PersonalScope)
        else "server-wide memories for this server"
    )
    return fail(
        S.LIMIT_EXCEEDED,
        f"The limit of {limit} {what} is reached ({count} saved). Nothing was "
        "saved; a person can delete memories (or ask you to) to make room.",
        limit=limit,
        count=count,
    )
