"""The ``create_long_term_memory`` flow (SPEC §3), in the order the spec checks."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from sqlalchemy.exc import SQLAlchemyError

from kioku._accounts import AccountRepository
from kioku._calibration import calibration_for
from kioku._context import PrivacyLevel, TurnContext
from kioku._domain.scopes import PersonalScope, ServerScope
from kioku._domain.settings import ServerSettings
from kioku._domain.statuses import CreateStatus as S
from kioku._domain.writes import CreateOutcome, NewMemory
from kioku._embeddings import embedding_text
from kioku._memory.arguments import CreateArgs, parse_create_args
from kioku._memory.flow import (
    FlowCall,
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
from kioku._memory.repository import GLOBAL_LINEAGE, MemoryRepository
from kioku._memory.resolution import Person
from kioku._memory.results import ToolResult
from kioku._memory.sameness import same_meaning
from kioku._memory.text import (
    SHOWS_AS_NOTHING,
    as_data,
    name_key,
    quoted_data,
    render_tokens,
    sanitise_content,
    with_bridge_name,
)
from kioku._memory.typed import TypedFields
from kioku._reach import reach_of
from kioku._search.candidates import nearest

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
        target, content = _resolve_target(call, context, args)
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
    return save(call, context, scope, target, content, typed)


def checked_content(call: FlowCall, context: TurnContext, raw: str, *, field: str) -> str:
    """Sanitised content within the length limit, for a persona with a lineage."""
    content = sanitise_content(raw)
    if not content:
        raise fail(S.INVALID_CONTENT, f"{field} is empty after removing invalid characters")
    if not as_data(content):
        raise fail(S.INVALID_CONTENT, f"{field} {SHOWS_AS_NOTHING}")
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
    scope: ServerScope | PersonalScope,
    target: Person | None,
    content: str,
    typed: TypedFields | None = None,
) -> ToolResult:
    """Insert within the limit, commit, then invalidate the cache and emit the notice.

    Whether self-teaching is on is decided here, by the write itself (SPEC §3 step 2 for
    a call that passed every other check), so a successful save reads no settings first.
    A memory without an ``event_time`` happened when the turn's message was sent, if the
    context knows (else when it is saved).
    """
    typed = typed or TypedFields()
    sent = context.message_time_utc()
    if sent is not None and "event_time" not in typed.attributes:
        typed = replace(typed, attributes={**typed.attributes, "event_time": sent.isoformat()})
    saved, id_withheld = _insert(call, context, scope, target, content, typed)
    assert saved.memory_id is not None  # saved and already_saved carry the id
    record_id, personal_enabled = saved.memory_id, saved.personal_memories_enabled
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
    call.store.invalidate(scope)
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


def _personal_settings(
    call: FlowCall, context: TurnContext, scope: ServerScope | PersonalScope
) -> ServerSettings | None:
    """The server's settings, read before the write for a personal scope only.

    Whether the turn sees a personal scope depends on them (:func:`_shown_to`).
    """
    if not isinstance(scope, PersonalScope):
        return None
    return AccountRepository(call.session).settings_for(context)


def _shown_to(
    context: TurnContext, scope: ServerScope | PersonalScope, settings: ServerSettings | None
) -> bool:
    """Whether this turn sees ``scope``'s memories (:mod:`kioku._reach` decides)."""
    if not isinstance(scope, PersonalScope) or settings is None:
        return True
    reach = reach_of(context, personal_memories_enabled=settings.personal_memories_enabled)
    return reach.shows_personal(scope.user_id)


DUPLICATE_CANDIDATES = 10
"""Nearest memories of the scope compared with a new one (near-misses can crowd the
one it repeats: "drinks 3 cups of tea" … "drinks 7 cups" around "drinks two cups")."""


def _refuse_repeat(
    call: FlowCall,
    context: TurnContext,
    scope: ServerScope | PersonalScope,
    target: Person | None,
    content: str,
    embedding: list[float],
    typed: TypedFields,
    settings: ServerSettings | None,
) -> None:
    """Refuse a memory that means the same as one already in ``scope`` (which the turn sees).

    Identical text is left to the write, which answers ``already_saved``. ``settings``:
    the server's, when already read.
    """
    store = call.store
    threshold = store.settings.duplicate_similarity
    if threshold is None:
        threshold = calibration_for(store.embedder.model).duplicate
    rows = nearest(
        call.session,
        scope.visibility(),
        embedding,
        limit=DUPLICATE_CANDIDATES,
        sizes=store.search_aids.sizes,
    )
    names = {
        "user_name": target.display_name if target is not None else "User",
        "bot_name": context.persona.name,
    }
    # Compared as the context shows them: "{user} likes tea" for Alice is "Alice likes
    # tea", and full-width letters are plain ones (folded as embeddings are).
    new_text = embedding_text(render_tokens(content, **names))
    for row in rows:
        identical = row.content == content
        shown = render_tokens(row.content, **names)
        old_text = embedding_text(shown)
        if (
            identical
            or _folded(old_text) == _folded(new_text)
            or same_meaning(old_text, new_text, 1.0 - row.score, threshold)
        ):
            repository = MemoryRepository(call.session)
            if not repository.same_event(row.id, typed.memory_type, typed.attributes):
                continue  # the same words, of an episode on another day
            if identical or repository.holds(scope, content, typed.memory_type, typed.attributes):
                return  # an exact repeat (maybe of a memory not embedded yet): already_saved
            # Read only now, on this rare path: a disabled server answers as disabled.
            settings = settings or AccountRepository(call.session).settings_for(context)
            if not settings.self_teaching_enabled:
                raise disabled(STATUSES)
            owner = {} if target is None else {"target_user": target.display_name}
            with_owner = "".join(f' and target_user "{name}"' for name in owner.values())
            raise fail(
                S.DUPLICATE,
                f"This means the same as ID:{row.id}, already saved: {quoted_data(shown)}. "
                "Nothing was saved. To change or add to it, call update_long_term_memory with "
                f"memory_id {row.id}{with_owner} and the full new text; if it is a different "
                "fact, say what sets it apart (who, when, how much).",
                memory_id=row.id,
                existing_content=as_data(shown),
                **owner,
            )


def _folded(text: str) -> str:
    """``text`` without differences of case or spacing."""
    return " ".join(text.casefold().split())


create_long_term_memory = tool_flow("create_long_term_memory", STATUSES, _create)
"""Validate, resolve, check the limit and save one memory: one unit of work in ``session``.

Commits on success; never raises (every failure is a status and writes nothing).
"""


def _resolve_target(
    call: FlowCall, context: TurnContext, args: CreateArgs
) -> tuple[Person | None, str]:
    """The owner of a personal memory (``None`` for server-wide) and the content to save.

    Personal memories may only be about the conversation's participants (see
    :mod:`kioku._reach`), so nobody fills the quota of someone who is not there.
    """
    if args.scope == "server_wide" or args.target_user is None:
        return None, args.content
    person = resolve_or_fail(call, context, args.target_user, STATUSES)
    if person.is_bot:
        return None, args.content
    if person.is_bridge:
        # Tokens are normalised first, so {User} and {USER} name the bridged user too.
        return None, with_bridge_name(args.content, person.display_name)
    if not reach_of(context).is_participant(person.user_id):
        raise fail(
            S.USER_NOT_FOUND,
            f"{person.display_name} is not taking part in this conversation; personal "
            "memories can only be saved about its participants. Nothing was saved.",
        )
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
    scope: ServerScope | PersonalScope,
    target: Person | None,
    content: str,
    typed: TypedFields,
) -> tuple[CreateOutcome, bool]:
    """Save (committed) through the one-call create, or find the identical memory.

    A disabled server or a full scope ends the flow. The flag: the id must not be shown
    (a lost reply in a scope the turn cannot see, where the row found may be an earlier
    memory that no answer may confirm).
    """
    defaults = call.store.settings
    personal = isinstance(scope, PersonalScope)
    embedding = embed_or_queue(call.store, content)  # before the write: the embedder may be slow
    # In a scope the turn cannot see, no answer may confirm what a memory says: neither a
    # refusal naming it nor "already saved" with its id; the create is a plain insert.
    settings = _personal_settings(call, context, scope)
    shown = _shown_to(context, scope, settings)
    if embedding is not None and shown:
        # Under the scope's write lock, so that of two writers saving the same fact at once
        # the second compares with the first one's memory.
        MemoryRepository(call.session).lock_scope(scope)
        _refuse_repeat(call, context, scope, target, content, embedding, typed, settings)
    else:
        on_its_own(call.session)  # nothing to compare: the create is atomic on its own
    new = NewMemory(
        scope=scope,
        content=content,
        server_key=context.memory_server_key,
        server_name=context.server_name,
        is_dm=context.is_dm,
        default_limit=(
            defaults.max_personal_memories if personal else defaults.max_server_memories
        ),
        owner_name=target.display_name if target is not None else None,
        owner_key=name_key(target.display_name if target is not None else None),
        persona_id=context.persona.persona_id,
        created_by=context.user.user_id,
        embedding=embedding,
        memory_type=typed.memory_type,
        importance=typed.importance,
        decay_rate=typed.decay_rate,
        attributes=typed.attributes,
        check_repeat=shown,
    )
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
        withheld = not shown and saved.outcome == "saved"
    else:
        withheld = False
    if saved.outcome == "disabled":
        raise disabled(STATUSES)
    if saved.outcome == "limit_reached":
        what = (
            f"personal memories for {target.display_name if target else 'this user'}"
            if personal
            else "server-wide memories for this server"
        )
        raise fail(
            S.LIMIT_EXCEEDED,
            f"The limit of {saved.limit} {what} is reached ({saved.count} saved). Nothing was "
            "saved; a person can delete memories (or ask you to) to make room.",
            limit=saved.limit,
            count=saved.count,
        )
    return saved, withheld
