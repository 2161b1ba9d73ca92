"""The ``update_long_term_memory`` flow (SPEC §4): update, or delete with empty content."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from kioku._context import PrivacyLevel, TurnContext
from kioku._memory.arguments import UpdateArgs, parse_update_args
from kioku._memory.flow import (
    FlowCall,
    FlowStatuses,
    commit_or_confirm,
    embed_or_queue,
    fail,
    notify,
    open_turn,
    resolve_or_fail,
    tool_flow,
)
from kioku._memory.notices import MemoryNotice, NoticeKind, NoticeScope, footer_for
from kioku._memory.repository import (
    GLOBAL_LINEAGE,
    ContentChange,
    MemoryRecord,
    MemoryRepository,
    PersonalScope,
    ServerScope,
)
from kioku._memory.resolution import Person
from kioku._memory.results import ToolResult
from kioku._memory.statuses import UpdateStatus as S
from kioku._memory.text import render_tokens, sanitise_content
from kioku._reach import Reach, reach_of

HIDDEN_TEXT = "(not shown: this person's memories are kept out of the conversation)"
"""Notice text for a change to a memory the turn does not show."""

STATUSES = FlowStatuses(
    S.INVALID_ARGS, S.DISABLED, S.INTERNAL_ERROR, S.DB_ERROR, S.AMBIGUOUS_USER, S.USER_NOT_FOUND
)


def _update(call: FlowCall) -> ToolResult:
    args = parse_update_args(call.arguments)
    context, settings = open_turn(call, STATUSES)
    if context.persona.lineage_id <= GLOBAL_LINEAGE:
        raise fail(S.INTERNAL_ERROR, "The persona has no lineage (the database needs migrating).")
    content = sanitise_content(args.content)
    if not content and args.content.strip(" \t\r\n"):
        # Only an empty memory_content deletes; text that cleans away to nothing is refused.
        raise fail(
            S.INVALID_CONTENT,
            "memory_content holds only characters that cannot be stored (control characters, "
            'NUL, lone surrogates). Write the new text, or pass "" to delete the memory.',
        )
    deleting = not content
    max_length = call.store.settings.max_memory_length
    if len(content) > max_length:
        raise fail(
            S.INVALID_CONTENT,
            f"memory_content is {len(content)} characters; the maximum is {max_length}.",
        )
    reach = reach_of(context, personal_memories_enabled=settings.personal_memories_enabled)
    owner = _resolve_owner(call, context, reach, args, deleting=deleting)
    scope: ServerScope | PersonalScope = (
        PersonalScope(owner.user_id, context.persona.lineage_id)
        if owner is not None
        else ServerScope(context.memory_server_key, context.persona.lineage_id)
    )
    embedding = embed_or_queue(call.store, content) if content else None  # before the row lock
    old, change = _change(call, context, reach, args.memory_id, scope, content, embedding)

    def applied(session: Session) -> bool:
        now = MemoryRepository(session).settled_content(args.memory_id)
        return now is None if deleting else now == content

    if commit_or_confirm(call, STATUSES, applied) and change is not None:
        call.store.applied_update(scope, change)
    else:
        call.store.invalidate(scope)
    effective: NoticeScope = "target_user" if owner is not None else "server_wide"
    kind: NoticeKind = "deleted" if deleting else "updated"
    owner_name = owner.display_name if owner is not None else "User"
    persona_name = context.persona.name
    # The deleted text is shown only where the memory was: the triggering user deleting
    # their own unshown memory (FULL privacy, personal memories off) gets no echo of it.
    shown = owner is None or reach.shows_personal(owner.user_id)
    text = old.content if deleting else content
    notify(
        MemoryNotice(
            kind=kind,
            scope=effective,
            memory_id=args.memory_id,
            content=(
                render_tokens(text, user_name=owner_name, bot_name=persona_name)
                if shown
                else HIDDEN_TEXT
            ),
            persona_name=persona_name,
            target_user=owner.display_name if owner is not None else None,
            footer=footer_for(
                kind, effective, persona_name, args.memory_id, settings.personal_memories_enabled
            ),
        ),
        context,
        call,
    )
    data: dict[str, Any] = {"memory_id": args.memory_id, "memory_scope": effective}
    if deleting:
        if shown:
            data["deleted_content"] = old.content
        return ToolResult(S.DELETED, f"ID:{args.memory_id} deleted.", data)
    return ToolResult(S.UPDATED, f"ID:{args.memory_id} updated.", {**data, "content": content})


update_long_term_memory = tool_flow("update_long_term_memory", STATUSES, _update)
"""Update or delete one memory the turn may address: one unit of work in ``session``.

Commits on success; never raises (every failure is a status and writes nothing).
"""


def _resolve_owner(
    call: FlowCall, context: TurnContext, reach: Reach, args: UpdateArgs, *, deleting: bool
) -> Person | None:
    """The owner named by ``target_user`` (``None``: the server-wide path).

    Memories of people out of the turn's reach answer exactly like a missing id.
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
    if not reach.may_change_personal(person.user_id):
        raise fail(S.NOT_FOUND, not_found_reason(args.memory_id))
    if not deleting and person.privacy != PrivacyLevel.MINIMAL:
        raise fail(
            S.PRIVACY_RESTRICTED,
            f"{person.display_name}'s privacy settings do not allow personal memories; "
            "you may only delete them.",
        )
    return person


def _change(
    call: FlowCall,
    context: TurnContext,
    reach: Reach,
    memory_id: int,
    scope: ServerScope | PersonalScope,
    content: str,
    embedding: list[float] | None,
) -> tuple[MemoryRecord, ContentChange | None]:
    """Update or delete the row inside ``scope``: the row as it was, and the update made."""
    actor, persona_id = context.user.user_id, context.persona.persona_id
    memories = MemoryRepository(call.session)
    if content:
        updated = memories.update_in_scope(
            memory_id, scope, content, actor=actor, persona_id=persona_id, embedding=embedding
        )
        if updated is None:
            raise fail(S.NOT_FOUND, _where_else(memories, context, reach, memory_id, scope))
        return updated
    old = memories.find_for_update(memory_id, scope)
    if old is None:
        raise fail(S.NOT_FOUND, _where_else(memories, context, reach, memory_id, scope))
    memories.delete(memory_id, actor=actor, persona_id=persona_id)
    return old, None


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
