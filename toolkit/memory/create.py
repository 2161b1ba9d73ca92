"""The ``create_long_term_memory`` flow (SPEC §3), in the order the spec checks."""

from __future__ import annotations

from typing import Any

from toolkit.accounts import AccountRepository, ServerSettings
from toolkit.context import PrivacyLevel, TurnContext
from toolkit.memory.arguments import CreateArgs, parse_create_args
from toolkit.memory.flow import (
    FlowCall,
    FlowStatuses,
    embed_or_queue,
    fail,
    notify,
    open_turn,
    resolve_or_fail,
    tool_flow,
)
from toolkit.memory.notices import MemoryNotice, NoticeScope, footer_for
from toolkit.memory.repository import GLOBAL_LINEAGE, MemoryRepository, PersonalScope, ServerScope
from toolkit.memory.resolution import Person
from toolkit.memory.results import ToolResult
from toolkit.memory.statuses import CreateStatus as S
from toolkit.memory.text import render_tokens, sanitise_content
from toolkit.memory.typed import TypedFields

STATUSES = FlowStatuses(
    S.INVALID_ARGS, S.DISABLED, S.INTERNAL_ERROR, S.DB_ERROR, S.AMBIGUOUS_USER, S.USER_NOT_FOUND
)


def _create(call: FlowCall) -> ToolResult:
    args = parse_create_args(call.arguments)
    context, settings = open_turn(call, STATUSES)
    target, content = _resolve_target(call, context, args)
    content = checked_content(call, context, content, field="memory_content")
    scope: ServerScope | PersonalScope = (
        PersonalScope(target.user_id, context.persona.lineage_id)
        if target is not None
        else ServerScope(context.memory_server_key, context.persona.lineage_id)
    )
    return save(call, context, settings, scope, target, content)


def checked_content(call: FlowCall, context: TurnContext, raw: str, *, field: str) -> str:
    """Sanitised content within the length limit, for a persona with a lineage."""
    content = sanitise_content(raw)
    if not content:
        raise fail(S.INVALID_CONTENT, f"{field} is empty after removing invalid characters")
    max_length = call.store.settings.max_memory_length
    if len(content) > max_length:
        raise fail(
            S.INVALID_CONTENT,
            f"{field} is {len(content)} characters; the maximum is {max_length}. "
            "Shorten it to the essential fact.",
        )
    if context.persona.lineage_id <= GLOBAL_LINEAGE:
        raise fail(
            S.INTERNAL_ERROR,
            "The persona has no lineage (the database needs migrating); nothing was saved.",
        )
    return content


def save(
    call: FlowCall,
    context: TurnContext,
    settings: ServerSettings,
    scope: ServerScope | PersonalScope,
    target: Person | None,
    content: str,
    typed: TypedFields | None = None,
) -> ToolResult:
    """Insert within the limit, commit, then invalidate the cache and emit the notice."""
    typed = typed or TypedFields()
    record_id = _insert(call, context, settings, scope, target, content, typed)
    call.session.commit()
    call.store.invalidate(scope)
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
        call,
    )
    data: dict[str, Any] = {"memory_id": record_id, "memory_scope": effective, "content": content}
    if target is not None:
        data["target_user"] = target.display_name
    if typed.memory_type != "semantic" or typed.attributes:
        data.update(memory_type=typed.memory_type, importance=typed.importance)
    return ToolResult(S.SAVED, f"Saved as ID:{record_id}.", data)


create_long_term_memory = tool_flow("create_long_term_memory", STATUSES, _create)
"""Validate, resolve, check the limit and save one memory: one unit of work in ``session``.

Commits on success; never raises (every failure is a status and writes nothing).
"""


def _resolve_target(
    call: FlowCall, context: TurnContext, args: CreateArgs
) -> tuple[Person | None, str]:
    """The owner of a personal memory (``None`` for server-wide) and the content to save."""
    if args.scope == "server_wide" or args.target_user is None:
        return None, args.content
    person = resolve_or_fail(call, context, args.target_user, STATUSES)
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
    call: FlowCall,
    context: TurnContext,
    settings: ServerSettings,
    scope: ServerScope | PersonalScope,
    target: Person | None,
    content: str,
    typed: TypedFields,
) -> int:
    """Check the limit and insert; the advisory lock serialises writers of the scope."""
    defaults = call.store.settings
    if isinstance(scope, ServerScope):
        limit = settings.max_server_memories or defaults.max_server_memories
        what = "server-wide memories for this server"
    else:
        limit = settings.max_personal_memories or defaults.max_personal_memories
        what = f"personal memories for {target.display_name if target else 'this user'}"
    embedding = embed_or_queue(call.store, content)  # before the lock: the embedder may be slow
    memories = MemoryRepository(call.session)
    memories.lock_scope(scope)
    accounts = AccountRepository(call.session)
    if not settings.stored:
        accounts.ensure_server(context.memory_server_key, context.server_name, is_dm=context.is_dm)
    if target is not None:
        accounts.ensure_user(target.user_id, target.display_name)
    record, count = memories.add_within_limit(
        scope,
        limit,
        content,
        persona_id=context.persona.persona_id,
        created_by=context.user.user_id,
        embedding=embedding,
        memory_type=typed.memory_type,
        importance=typed.importance,
        decay_rate=typed.decay_rate,
        attributes=typed.attributes,
    )
    if record is None:
        call.session.rollback()  # nothing half-written: not even the server or user row
        raise fail(
            S.LIMIT_EXCEEDED,
            f"The limit of {limit} {what} is reached ({count} saved). Nothing was saved; "
            "a person can delete memories (or ask you to) to make room.",
            limit=limit,
            count=count,
        )
    return record.id
