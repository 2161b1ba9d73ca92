"""The ``update_long_term_memory`` flow (SPEC §4): update, or delete with empty content."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from kioku._accounts import AccountRepository
from kioku._context import TurnContext
from kioku._domain.records import MemoryRecord
from kioku._domain.scopes import PersonalScope, ServerScope
from kioku._domain.settings import ServerSettings
from kioku._domain.statuses import UpdateStatus as S
from kioku._domain.writes import ContentChange
from kioku._memory.arguments import UpdateArgs, parse_update_args
from kioku._memory.flow import (
    FlowCall,
    FlowStatuses,
    commit_or_confirm,
    confirm_outcome,
    connection_lost,
    disabled,
    embed_or_queue,
    fail,
    notify,
    on_its_own,
    open_turn,
    require_context,
    resolve_or_fail,
    settings_first,
    tool_flow,
)
from kioku._memory.notices import MemoryNotice, NoticeKind, NoticeScope, footer_for
from kioku._memory.repository import GLOBAL_LINEAGE, MemoryRepository
from kioku._memory.resolution import Person
from kioku._memory.results import ToolResult
from kioku._memory.text import (
    SHOWS_AS_NOTHING,
    CheckedContent,
    ContentFault,
    check_content,
    render_tokens,
)
from kioku._memory.write_decision import (
    Decision,
    Refusal,
    Write,
    decide,
    decisions_by_settings,
)
from kioku._reach import Reach, reach_of
from kioku._recorded_embedder import reread

logger = logging.getLogger("kioku._memory")

HIDDEN_TEXT = "(not shown: this person's memories are kept out of the conversation)"
"""Notice text for a change to a memory the turn does not show."""

STATUSES = FlowStatuses(
    S.INVALID_ARGS, S.DISABLED, S.INTERNAL_ERROR, S.DB_ERROR, S.AMBIGUOUS_USER, S.USER_NOT_FOUND
)


def _update(call: FlowCall) -> ToolResult:
    args = parse_update_args(call.arguments)
    context = require_context(call, STATUSES)
    checked = check_content(args.content, call.deps.settings.max_memory_length)
    content = checked.text
    # A delete locks the row, then deletes it: a transaction, opened by reading the
    # settings. An update is one statement that reads them itself.
    if not content:
        settings = open_turn(call, STATUSES)[1]
        owner = _checked_owner(call, context, args, checked, settings)
        scope = _scope_of(context, owner)
        old = _delete(call, context, args.memory_id, scope, settings)
        decision = decide(Write("delete", _owner_id(owner)), settings, context)
        call.deps.windows.invalidate(scope)
        return _changed(call, context, args, owner, old.content, decision, deleting=True)
    with settings_first(call, context, STATUSES):
        owner = _checked_owner(call, context, args, checked, None)
    scope = _scope_of(context, owner)
    embedding = embed_or_queue(call.deps, content)  # before the row lock
    revision = Revision(content, embedding, args.event_time)
    old, change, decision = _change(call, context, args.memory_id, scope, revision, owner)
    if change is not None and args.event_time is None:
        call.deps.windows.applied_update(scope, change)
    else:  # a new time moves the memory in time: its window is read again
        call.deps.windows.invalidate(scope)
    return _changed(call, context, args, owner, content, decision, deleting=False)


def _scope_of(context: TurnContext, owner: Person | None) -> ServerScope | PersonalScope:
    """The scope of the memory the call names: the owner's, else the server's."""
    if owner is not None:
        return PersonalScope(owner.user_id, context.persona.lineage_id)
    return ServerScope(context.memory_server_key, context.persona.lineage_id)


def _owner_id(owner: Person | None) -> str | None:
    return owner.user_id if owner is not None else None


def _changed(
    call: FlowCall,
    context: TurnContext,
    args: UpdateArgs,
    owner: Person | None,
    text: str,
    decision: Decision,
    *,
    deleting: bool,
) -> ToolResult:
    """Emit the notice of a committed change and answer it (``text``: the new or deleted one).

    The deleted text is shown only where the memory was: the triggering user deleting
    their own unshown memory (FULL privacy, personal memories off) gets no echo of it.
    """
    effective: NoticeScope = "target_user" if owner is not None else "server_wide"
    kind: NoticeKind = "deleted" if deleting else "updated"
    persona_name = context.persona.name
    owner_name = owner.display_name if owner is not None else "User"
    rendered = render_tokens(text, user_name=owner_name, bot_name=persona_name)
    personal_on = decision.personal_memories_enabled
    notify(
        MemoryNotice(
            kind=kind,
            scope=effective,
            memory_id=args.memory_id,
            content=rendered if decision.shown else HIDDEN_TEXT,
            persona_name=persona_name,
            target_user=owner.display_name if owner is not None else None,
            footer=footer_for(kind, effective, persona_name, args.memory_id, personal_on),
        ),
        context,
        call,
    )
    data: dict[str, Any] = {"memory_id": args.memory_id, "memory_scope": effective}
    if deleting:
        if decision.shown:
            data["deleted_content"] = text
        return ToolResult(S.DELETED, f"ID:{args.memory_id} deleted.", data)
    if args.event_time is not None:
        data["event_time"] = args.event_time.isoformat()
    return ToolResult(S.UPDATED, f"ID:{args.memory_id} updated.", {**data, "content": text})


update_long_term_memory = tool_flow("update_long_term_memory", STATUSES, _update)
"""Update or delete one memory the turn may address: one unit of work in ``session``.

Commits on success; never raises (every failure is a status and writes nothing).
"""


def _checked_owner(
    call: FlowCall,
    context: TurnContext,
    args: UpdateArgs,
    checked: CheckedContent,
    settings: ServerSettings | None,
) -> Person | None:
    """Check the call and resolve the owner it names (``None``: the server-wide path).

    ``settings``: the server's, when already read (a delete); otherwise the update's
    statement checks what depends on them.
    """
    content = checked.text
    if context.persona.lineage_id <= GLOBAL_LINEAGE:
        raise fail(S.INTERNAL_ERROR, "The persona has no lineage (the database needs migrating).")
    if not content and args.event_time is not None:
        raise fail(
            S.INVALID_ARGS,
            "event_time goes with new text: an empty memory_content deletes the memory. To "
            "correct only the time, pass the memory's text again with event_time.",
        )
    if checked.fault is ContentFault.EMPTY and args.content.strip(" \t\r\n"):
        # Only an empty memory_content deletes; text that cleans away to nothing is refused.
        raise fail(
            S.INVALID_CONTENT,
            "memory_content holds only characters that cannot be stored (control characters, "
            'NUL, lone surrogates). Write the new text, or pass "" to delete the memory.',
        )
    if checked.fault is ContentFault.SHOWS_AS_NOTHING:
        raise fail(
            S.INVALID_CONTENT,
            f'memory_content {SHOWS_AS_NOTHING}, or pass "" to delete the memory.',
        )
    if checked.fault is ContentFault.TOO_LONG:
        max_length = call.deps.settings.max_memory_length
        raise fail(S.INVALID_CONTENT, checked.too_long("memory_content", max_length) + ".")
    return _resolve_owner(call, context, args, settings, deleting=not content)


def _resolve_owner(
    call: FlowCall,
    context: TurnContext,
    args: UpdateArgs,
    settings: ServerSettings | None,
    *,
    deleting: bool,
) -> Person | None:
    """The owner named by ``target_user`` (``None``: the server-wide path).

    Memories of people out of the turn's reach answer exactly like a missing id. Without
    ``settings`` (an update), the owner is refused when no settings would let the write
    decision allow the change; the update's statement applies its answer for the settings
    it reads.
    """
    if args.target_user is None:
        return None
    person = resolve_or_fail(call, context, args.target_user, STATUSES)
    if person.is_bridge:
        raise fail(
            S.INVALID_SCOPE,
            f"{person.display_name} is a bridged user and has no personal memories; "
            "their facts live in server-wide memories (omit target_user).",
        )
    if person.is_bot:
        raise fail(
            S.INVALID_TARGET,
            "There are no personal memories about yourself; memories about you are "
            "server-wide (omit target_user).",
        )
    write = Write("delete" if deleting else "update", person.user_id)
    if not (
        decide(write, settings, context).allowed
        if settings is not None
        else any(decisions_by_settings(write, context))
    ):
        raise fail(S.NOT_FOUND, not_found_reason(args.memory_id))
    if not deleting and not person.privacy.allows_personal_memories:
        raise fail(
            S.PRIVACY_RESTRICTED,
            f"{person.display_name}'s privacy settings do not allow personal memories; "
            "you may only delete them.",
        )
    return person


class Revision(NamedTuple):
    """What an update writes: the new text, its embedding, and a corrected event time."""

    content: str
    embedding: list[float] | None
    event_time: datetime | None


def _change(
    call: FlowCall,
    context: TurnContext,
    memory_id: int,
    scope: ServerScope | PersonalScope,
    revision: Revision,
    owner: Person | None,
) -> tuple[MemoryRecord, ContentChange | None, Decision]:
    """Update the row inside ``scope`` in one statement, committed.

    Returns the row as it was, the change (``None`` when a lost reply was checked instead)
    and the write decision on the settings the statement read.
    """
    write = Write("update", _owner_id(owner))
    on_its_own(call.session)
    memories = MemoryRepository(call.session)
    call.session.connection()  # a failure to connect means nothing was sent
    try:
        outcome = memories.update_in_scope(
            memory_id,
            scope,
            revision.content,
            settings_key=context.memory_server_key,
            is_dm=context.is_dm,
            allowed=decisions_by_settings(write, context),
            actor=context.user.user_id,
            persona_id=context.persona.persona_id,
            embedding=revision.embedding,
            embedder=call.deps.embedder.model,
            event_time=revision.event_time,
        )
        call.session.commit()
    except SQLAlchemyError as exc:
        if not connection_lost(exc):
            raise
        logger.warning("kioku: the reply to an update was lost (%s); checking", exc)
        return _confirmed(call, context, memory_id, scope, revision, write)
    if outcome.vector_refused:  # saved queued: the database records another embedder now
        reread(call.deps)
    read = ServerSettings(
        self_teaching_enabled=outcome.self_teaching_enabled,
        personal_memories_enabled=outcome.personal_memories_enabled,
    )
    decision = decide(write, read, context)
    if decision.refusal is Refusal.DISABLED:
        raise disabled(STATUSES)
    if outcome.updated is None:  # out of the scope, or of reach with these settings
        reach = reach_of(context, personal_memories_enabled=outcome.personal_memories_enabled)
        raise fail(S.NOT_FOUND, _where_else(memories, context, reach, memory_id, scope))
    old, change = outcome.updated
    return old, change, decision


def _confirmed(
    call: FlowCall,
    context: TurnContext,
    memory_id: int,
    scope: ServerScope | PersonalScope,
    revision: Revision,
    write: Write,
) -> tuple[MemoryRecord, None, Decision]:
    """What an update whose reply was lost did, asked on a fresh connection.

    It happened when the memory, in ``scope``, now holds the revision's text (and event
    time) and the write decision allows it on the settings now (one that refused changed
    nothing). A writer that changed the memory again in between makes it read as not done.
    """

    def check(session: Session) -> tuple[MemoryRecord, Decision] | None:
        row = MemoryRepository(session).find_for_update(memory_id, scope)
        if row is None or row.content != revision.content:
            return None
        if revision.event_time is not None and row.event_time != revision.event_time:
            return None
        decision = decide(write, AccountRepository(session).settings_for(context), context)
        return (row, decision) if decision.allowed else None

    row, decision = confirm_outcome(call, STATUSES, check)
    return row, None, decision


def _delete(
    call: FlowCall,
    context: TurnContext,
    memory_id: int,
    scope: ServerScope | PersonalScope,
    settings: ServerSettings,
) -> MemoryRecord:
    """Delete the row inside ``scope``, committed: the row as it was."""
    memories = MemoryRepository(call.session)
    old = memories.find_for_update(memory_id, scope)
    if old is None:
        reach = reach_of(context, personal_memories_enabled=settings.personal_memories_enabled)
        raise fail(S.NOT_FOUND, _where_else(memories, context, reach, memory_id, scope))
    memories.delete(memory_id, actor=context.user.user_id, persona_id=context.persona.persona_id)

    def applied(session: Session) -> bool:
        return MemoryRepository(session).settled_content(memory_id) is None

    commit_or_confirm(call, STATUSES, applied)
    return old


def not_found_reason(memory_id: int) -> str:
    """The reason for an id this turn cannot change: the same whether or not it exists."""
    return f"ID:{memory_id} is not a memory you can change here. Check the ID:N in your context."


def _where_else(
    memories: MemoryRepository,
    context: TurnContext,
    reach: Reach,
    memory_id: int,
    scope: ServerScope | PersonalScope,
) -> str:
    """Say where the id lives when this turn could change it there; reveal nothing else."""
    row = memories.get(memory_id)
    lineage = context.persona.lineage_id
    if row is None or row.scope == scope.kind:
        return not_found_reason(memory_id)
    if (
        row.scope == "server"
        and row.server_id == reach.server_key
        and row.persona_lineage_id == lineage
    ):
        return f"ID:{memory_id} is a server-wide memory; call again without target_user."
    if (
        row.scope == "personal"
        and row.user_id is not None
        and row.persona_lineage_id in (lineage, GLOBAL_LINEAGE)
        and reach.may_change_personal(row.user_id)
    ):
        for person in context.all_participants():
            if person.user_id == row.user_id:
                return (
                    f"ID:{memory_id} is a personal memory of {person.display_name}; "
                    f'pass target_user="{person.display_name}".'
                )
    return not_found_reason(memory_id)
