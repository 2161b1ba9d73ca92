"""The ``update_long_term_memory`` flow (SPEC §4): update, or delete with empty content."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sqlalchemy.orm import Session

from toolkit.accounts import ServerSettings
from toolkit.context import PrivacyLevel, TurnContext
from toolkit.memory.arguments import UpdateArgs, parse_update_args
from toolkit.memory.flow import (
    FailureStatuses,
    fail,
    is_current_member,
    notify,
    require_context,
    resolve_person,
    run_flow,
    server_settings,
)
from toolkit.memory.notices import MemoryNotice, NoticeKind, NoticeScope, footer_for
from toolkit.memory.repository import (
    GLOBAL_LINEAGE,
    MemoryRecord,
    MemoryRepository,
    PersonalScope,
    ServerScope,
)
from toolkit.memory.resolution import Ambiguous, NotFound, Person, Resolved
from toolkit.memory.results import ToolResult
from toolkit.memory.statuses import UpdateStatus as S
from toolkit.memory.text import render_tokens, sanitise_content
from toolkit.store import KiokuStore

OPERATION = "update_long_term_memory"
_STATUSES = FailureStatuses(S.INVALID_ARGS, S.INTERNAL_ERROR, S.DB_ERROR)


def update_long_term_memory(
    session: Session,
    store: KiokuStore,
    context: object,
    arguments: Mapping[str, Any],
    *,
    stream_writer: Callable[[Any], None] | None = None,
) -> ToolResult:
    """Update or delete one memory the turn may address: one unit of work in ``session``.

    Commits on success; never raises (every failure is a status and writes nothing).
    """
    return run_flow(
        OPERATION, _STATUSES, lambda: _update(session, store, context, arguments, stream_writer)
    )


def _update(
    session: Session,
    store: KiokuStore,
    raw_context: object,
    arguments: Mapping[str, Any],
    stream_writer: Callable[[Any], None] | None,
) -> ToolResult:
    args = parse_update_args(arguments)
    context = require_context(raw_context, S.INTERNAL_ERROR)
    settings = server_settings(session, context)
    if not settings.self_teaching_enabled:
        raise fail(
            S.DISABLED,
            "Self-teaching is turned off here, so memories cannot be changed. "
            "A server admin can enable it.",
        )
    if context.persona.lineage_id <= GLOBAL_LINEAGE:
        raise fail(S.INTERNAL_ERROR, "The persona has no lineage (the database needs migrating).")
    content = sanitise_content(args.content)
    deleting = not content
    if len(content) > store.settings.max_memory_length:
        raise fail(
            S.INVALID_CONTENT,
            f"memory_content is {len(content)} characters; the maximum is "
            f"{store.settings.max_memory_length}.",
        )
    owner = _resolve_owner(store, session, context, args, deleting=deleting)
    scope: ServerScope | PersonalScope = (
        PersonalScope(owner.user_id, context.persona.lineage_id)
        if owner is not None
        else ServerScope(context.memory_server_key, context.persona.lineage_id)
    )
    old = _change(session, context, args.memory_id, scope, content)
    session.commit()
    store.invalidate(scope)
    effective: NoticeScope = "target_user" if owner is not None else "server_wide"
    kind: NoticeKind = "deleted" if deleting else "updated"
    shown = old.content if deleting else content
    owner_name = owner.display_name if owner is not None else "User"
    notify(
        MemoryNotice(
            kind=kind,
            scope=effective,
            memory_id=args.memory_id,
            content=render_tokens(shown, user_name=owner_name, bot_name=context.persona.name),
            persona_name=context.persona.name,
            target_user=owner.display_name if owner is not None else None,
            footer=_footer(kind, effective, context, args.memory_id, settings),
        ),
        context,
        stream_writer,
    )
    data: dict[str, Any] = {"memory_id": args.memory_id, "memory_scope": effective}
    if deleting:
        return ToolResult(
            S.DELETED, f"ID:{args.memory_id} deleted.", {**data, "deleted_content": old.content}
        )
    return ToolResult(S.UPDATED, f"ID:{args.memory_id} updated.", {**data, "content": content})


def _footer(
    kind: str, scope: str, context: TurnContext, memory_id: int, settings: ServerSettings
) -> str:
    return footer_for(
        kind, scope, context.persona.name, memory_id, settings.personal_memories_enabled
    )


def _resolve_owner(
    store: KiokuStore, session: Session, context: TurnContext, args: UpdateArgs, *, deleting: bool
) -> Person | None:
    """The owner named by ``target_user`` (``None``: the server-wide path)."""
    if args.target_user is None:
        return None
    found = resolve_person(store, session, context, args.target_user)
    if isinstance(found, Ambiguous):
        raise fail(
            S.AMBIGUOUS_USER,
            f"'{args.target_user}' matches several people: {', '.join(found.candidates)}. "
            "Use the exact name shown in the conversation.",
            candidates=list(found.candidates),
        )
    if isinstance(found, NotFound):
        raise fail(
            S.USER_NOT_FOUND,
            f"Nobody called '{args.target_user}' is in this conversation or server.",
        )
    assert isinstance(found, Resolved)
    person = found.person
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
    if not is_current_member(store, session, context, person.user_id):
        where = "this server" if context.server_id is not None else "this conversation"
        raise fail(
            S.INVALID_SCOPE,
            f"{person.display_name} is not a member of {where}, so their memories cannot be "
            "changed from here.",
        )
    if not deleting and person.privacy != PrivacyLevel.MINIMAL:
        raise fail(
            S.PRIVACY_RESTRICTED,
            f"{person.display_name}'s privacy settings do not allow personal memories; "
            "you may only delete them.",
        )
    return person


def _change(
    session: Session,
    context: TurnContext,
    memory_id: int,
    scope: ServerScope | PersonalScope,
    content: str,
) -> MemoryRecord:
    """Update or delete the row inside ``scope``; returns the row as it was."""
    actor, persona_id = context.user.user_id, context.persona.persona_id
    memories = MemoryRepository(session)
    old = memories.find_for_update(memory_id, scope)
    if old is None:
        raise fail(S.NOT_FOUND, _not_found_reason(memories, context, memory_id, scope))
    if content:
        memories.update_content(memory_id, old.content, content, actor=actor, persona_id=persona_id)
    else:
        memories.delete(memory_id, old.content, actor=actor, persona_id=persona_id)
    return old


def _not_found_reason(
    memories: MemoryRepository,
    context: TurnContext,
    memory_id: int,
    scope: ServerScope | PersonalScope,
) -> str:
    """Say where the id lives when this turn could see it there; reveal nothing otherwise."""
    generic = f"ID:{memory_id} is not a memory you can change here. Check the ID:N in your context."
    row = memories.get(memory_id)
    lineage = context.persona.lineage_id
    if row is None or row.scope == ("server" if isinstance(scope, ServerScope) else "personal"):
        return generic
    if (
        row.scope == "server"
        and row.server_id == context.memory_server_key
        and row.persona_lineage_id == lineage
    ):
        return f"ID:{memory_id} is a server-wide memory; call again without target_user."
    if row.scope == "personal" and row.persona_lineage_id in (lineage, GLOBAL_LINEAGE):
        for person in context.all_participants():
            if person.user_id == row.user_id and person.privacy == PrivacyLevel.MINIMAL:
                return (
                    f"ID:{memory_id} is a personal memory of {person.display_name}; "
                    f'pass target_user="{person.display_name}".'
                )
    return generic
