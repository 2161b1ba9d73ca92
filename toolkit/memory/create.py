"""The ``create_long_term_memory`` flow (SPEC §3), in the order the spec checks."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sqlalchemy.orm import Session

from toolkit.accounts import AccountRepository, ServerSettings
from toolkit.context import PrivacyLevel, TurnContext
from toolkit.memory.arguments import CreateArgs, parse_create_args
from toolkit.memory.flow import (
    FailureStatuses,
    fail,
    notify,
    require_context,
    resolve_person,
    run_flow,
    server_settings,
)
from toolkit.memory.notices import MemoryNotice, NoticeScope, footer_for
from toolkit.memory.repository import GLOBAL_LINEAGE, MemoryRepository, PersonalScope, ServerScope
from toolkit.memory.resolution import Ambiguous, NotFound, Person, Resolved
from toolkit.memory.results import ToolResult
from toolkit.memory.statuses import CreateStatus as S
from toolkit.memory.text import render_tokens, sanitise_content
from toolkit.store import KiokuStore

OPERATION = "create_long_term_memory"
_STATUSES = FailureStatuses(S.INVALID_ARGS, S.INTERNAL_ERROR, S.DB_ERROR)


def create_long_term_memory(
    session: Session,
    store: KiokuStore,
    context: object,
    arguments: Mapping[str, Any],
    *,
    stream_writer: Callable[[Any], None] | None = None,
) -> ToolResult:
    """Validate, resolve, check the limit and save one memory: one unit of work in ``session``.

    Commits on success; never raises (every failure is a status and writes nothing).
    """
    return run_flow(
        OPERATION, _STATUSES, lambda: _create(session, store, context, arguments, stream_writer)
    )


def _create(
    session: Session,
    store: KiokuStore,
    raw_context: object,
    arguments: Mapping[str, Any],
    stream_writer: Callable[[Any], None] | None,
) -> ToolResult:
    args = parse_create_args(arguments)
    context = require_context(raw_context, S.INTERNAL_ERROR)
    settings = server_settings(session, context)
    if not settings.self_teaching_enabled:
        raise fail(
            S.DISABLED,
            "Self-teaching is turned off here, so memories cannot be saved. "
            "A server admin can enable it.",
        )
    target, content = _resolve_target(store, session, context, args)
    content = sanitise_content(content)
    if not content:
        raise fail(S.INVALID_CONTENT, "memory_content is empty after removing invalid characters")
    max_length = store.settings.max_memory_length
    if len(content) > max_length:
        raise fail(
            S.INVALID_CONTENT,
            f"memory_content is {len(content)} characters; the maximum is {max_length}. "
            "Shorten it to the essential fact.",
        )
    if context.persona.lineage_id <= GLOBAL_LINEAGE:
        raise fail(
            S.INTERNAL_ERROR,
            "The persona has no lineage (the database needs migrating); nothing was saved.",
        )
    scope: ServerScope | PersonalScope = (
        PersonalScope(target.user_id, context.persona.lineage_id)
        if target is not None
        else ServerScope(context.memory_server_key, context.persona.lineage_id)
    )
    record_id = _insert(store, session, context, settings, scope, target, content)
    session.commit()
    store.invalidate(scope)
    effective: NoticeScope = "target_user" if target is not None else "server_wide"
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
            footer=footer_for(
                "created", effective, persona_name, record_id, settings.personal_memories_enabled
            ),
        ),
        context,
        stream_writer,
    )
    data: dict[str, Any] = {"memory_id": record_id, "memory_scope": effective, "content": content}
    if target is not None:
        data["target_user"] = target.display_name
    return ToolResult(S.SAVED, f"Saved as ID:{record_id}.", data)


def _resolve_target(
    store: KiokuStore, session: Session, context: TurnContext, args: CreateArgs
) -> tuple[Person | None, str]:
    """The owner of a personal memory (``None`` for server-wide) and the content to save."""
    if args.scope == "server_wide" or args.target_user is None:
        return None, args.content
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
            f"Nobody called '{args.target_user}' is in this conversation or server. "
            "Use the name as shown in the conversation.",
        )
    assert isinstance(found, Resolved)
    person = found.person
    if person.is_bot:
        return None, args.content
    if person.is_bridge:
        return None, args.content.replace("{user}", person.display_name)
    if person.privacy != PrivacyLevel.MINIMAL:
        raise fail(
            S.PRIVACY_RESTRICTED,
            f"{person.display_name}'s privacy settings do not allow personal memories. "
            "Do not save it elsewhere; they can change the setting themselves.",
        )
    return person, args.content


def _insert(
    store: KiokuStore,
    session: Session,
    context: TurnContext,
    settings: ServerSettings,
    scope: ServerScope | PersonalScope,
    target: Person | None,
    content: str,
) -> int:
    """Check the limit and insert; the advisory lock serialises writers of the scope."""
    if isinstance(scope, ServerScope):
        limit = settings.max_server_memories or store.settings.max_server_memories
        what = "server-wide memories for this server"
    else:
        limit = settings.max_personal_memories or store.settings.max_personal_memories
        what = f"personal memories for {target.display_name if target else 'this user'}"
    memories = MemoryRepository(session)
    memories.lock_scope(scope)
    count = memories.count(scope)
    if count >= limit:
        raise fail(
            S.LIMIT_EXCEEDED,
            f"The limit of {limit} {what} is reached ({count} saved). Nothing was saved; "
            "a person can delete memories (or ask you to) to make room.",
            limit=limit,
            count=count,
        )
    accounts = AccountRepository(session)
    accounts.ensure_server(context.memory_server_key, context.server_name, is_dm=context.is_dm)
    if target is not None:
        accounts.ensure_user(target.user_id, target.display_name)
    record = memories.add(
        scope, content, persona_id=context.persona.persona_id, created_by=context.user.user_id
    )
    return record.id
