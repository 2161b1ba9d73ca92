"""The turn context a consolidation writes with: one scope, addressed as the tools address it."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import select
from sqlalchemy.orm import Session

from kioku._context import (
    DEFAULT_BOT_USER_ID,
    DEFAULT_PERSONA,
    DM_KEY_PREFIX,
    USER_SPACE_PREFIX,
    Participant,
    Persona,
    PrivacyLevel,
    TurnContext,
    server_key,
    user_space,
)
from kioku._db.models import PersonaRow, Server, User
from kioku._deps import HasDeps
from kioku._domain.scopes import PersonalScope, ServerScope
from kioku._errors import ConfigurationError
from kioku._memory.notices import MemoryNotice

CONSOLIDATION_CHANNEL = "kioku-consolidate"
"""The channel of a consolidation's turn context (no conversation is read or written)."""
CONSOLIDATION_ACTOR = Participant("kioku-consolidate", "kioku consolidate")
"""Who history rows name for changes to server-wide memories."""

Notifier = Callable[[MemoryNotice], object]


def consolidation_context(
    store: HasDeps,
    scope: ServerScope | PersonalScope,
    *,
    server_id: str | None = None,
    persona: Persona | None = None,
    notifier: Notifier | None = None,
) -> TurnContext:
    """The turn context under which a consolidation of ``scope`` reads and writes.

    Server-wide memories are changed as a turn on their server (or direct-message
    conversation) would change them, by :data:`CONSOLIDATION_ACTOR` (in a user's own
    space, ``TurnContext.for_user``, by that user). Personal memories
    are changed as their owner's own turn would (the owner as the triggering user, with
    the privacy the ``users`` table gives them), so privacy rules apply as to any turn.

    Args:
        store: the store (or its dependencies).
        scope: the memories to consolidate.
        server_id: for a personal scope, the server whose settings govern the writes
            (default: the user's own space, :func:`kioku.user_space`); for a server scope
            it must be that scope's server, or ``None``.
        persona: the persona of the scope's lineage (default: a persona of that lineage
            found in the database, else the default assistant's name).
        notifier: receives the notice of every change.

    Raises:
        ConfigurationError: ``server_id`` or ``persona`` does not match ``scope``.
    """
    if persona is not None and persona.lineage_id != scope.lineage_id:
        raise ConfigurationError(
            f"persona {persona.name!r} has lineage {persona.lineage_id}, the scope "
            f"{scope.lineage_id}"
        )
    with store.deps.sessions() as session:
        if isinstance(scope, ServerScope):
            return _server_context(session, scope, server_id, persona, notifier)
        key = server_key(server_id or user_space(scope.user_id))
        return TurnContext(
            server_id=server_id or user_space(scope.user_id),
            server_name=_server_name(session, key),
            channel_id=CONSOLIDATION_CHANNEL,
            user=(owner := _person(session, scope.user_id)),
            participants=(owner,),
            persona=persona or _persona_of(session, scope.lineage_id, key),
            bot_user_id=DEFAULT_BOT_USER_ID,
            notifier=notifier,
        )


def _server_context(
    session: Session,
    scope: ServerScope,
    server_id: str | None,
    persona: Persona | None,
    notifier: Notifier | None,
) -> TurnContext:
    key = scope.server_id
    dm = key.startswith(DM_KEY_PREFIX)
    own_id = None if dm else server_id_of(key)
    if server_id is not None and server_id != own_id:
        raise ConfigurationError(
            f"the scope holds the memories of {key!r}, not of server {server_id!r}"
        )
    # A user's own space (TurnContext.for_user) is changed as its user would change it.
    owner = own_id.removeprefix(USER_SPACE_PREFIX) if own_id is not None else None
    actor = (
        _person(session, owner)
        if own_id is not None and own_id.startswith(USER_SPACE_PREFIX) and owner
        else CONSOLIDATION_ACTOR
    )
    return TurnContext(
        server_id=own_id,
        server_name=_server_name(session, key),
        channel_id=key.removeprefix(DM_KEY_PREFIX) if dm else CONSOLIDATION_CHANNEL,
        user=actor,
        participants=(actor,),
        persona=persona or _persona_of(session, scope.lineage_id, key),
        bot_user_id=DEFAULT_BOT_USER_ID,
        notifier=notifier,
    )


def server_id_of(key: str) -> str:
    """The server id whose memories are stored under ``key`` (the inverse of ``server_key``).

    Raises:
        ConfigurationError: no server id has this key.
    """
    for candidate in (key, key.partition(":")[2]):
        if server_key(candidate) == key:
            return candidate
    raise ConfigurationError(f"{key!r} is not the key of any server")


def _server_name(session: Session, key: str) -> str | None:
    return session.scalar(select(Server.name).where(Server.id == key))


def _person(session: Session, user_id: str) -> Participant:
    """The owner as the directory knows them (name, aliases, privacy)."""
    row = session.get(User, user_id)
    if row is None:
        return Participant(user_id, user_id)
    return Participant(
        user_id,
        row.display_name,
        tuple(row.aliases or ()),
        PrivacyLevel(row.privacy_level),
        row.is_bridge,
    )


def _persona_of(session: Session, lineage_id: int, key: str) -> Persona:
    """A persona of ``lineage_id``, preferably one of the server ``key``."""
    row = session.scalar(
        select(PersonaRow)
        .where(PersonaRow.lineage_id == lineage_id)
        .order_by((PersonaRow.server_id == key).desc().nulls_last(), PersonaRow.id)
        .limit(1)
    )
    if row is None:
        return Persona(DEFAULT_PERSONA.persona_id, DEFAULT_PERSONA.name, lineage_id)
    return Persona(row.id, row.name, row.lineage_id)
