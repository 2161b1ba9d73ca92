"""Who may see and change which memories in a turn: the one place this rule lives.

Every path — the tools, the context build, search, MCP and the Python API — asks
:func:`reach_of` and nothing else:

- **Server-wide memories** of the turn's server (or direct-message conversation) and
  active persona lineage are visible and changeable.
- **Personal memories** are visible for the conversation's participants (the triggering
  user included) whose privacy is ``MINIMAL``, when the server has personal memories on;
  global (lineage 0) ones included. The bot and bridged users have none.
- They are **changeable** (updated or deleted) for those same people, and the triggering
  user may always delete their own (whatever their privacy). Anyone else's are out of
  reach: to the model they look exactly like ids that do not exist.
- **New personal memories** may only be about the conversation's participants, so nobody
  can fill the quota of a person who is not in the conversation.
- **Short-term memory** never holds a message of a ``FULL``-privacy person, nor the bot's
  reply to one: a message is remembered only when :func:`may_remember_message` allows it,
  on capture (whoever triggers it) and again when it is recalled.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from kioku._context import Participant, PrivacyLevel, TurnContext
from kioku._domain.visibility import Visibility


@dataclass(frozen=True, slots=True)
class Reach:
    """The memories one turn may see and change."""

    server_key: str
    """Key of the server-wide memories (the server, or the direct-message conversation)."""
    lineage_id: int
    """The active persona lineage."""
    user_id: str
    """The triggering user."""
    participant_ids: frozenset[str]
    """Everyone in the conversation, the triggering user included, the bot excluded."""
    visible_owners: tuple[str, ...]
    """People whose personal memories this turn shows and may change."""

    def visibility(self) -> Visibility:
        """The memories this turn may read (for search and look-ups by id)."""
        return Visibility(self.server_key, self.lineage_id, self.visible_owners)

    def may_change_personal(self, owner_id: str) -> bool:
        """Whether a personal memory of ``owner_id`` may be updated or deleted."""
        return owner_id == self.user_id or owner_id in self.visible_owners

    def shows_personal(self, owner_id: str) -> bool:
        """Whether personal memories of ``owner_id`` are shown in this turn."""
        return owner_id in self.visible_owners

    def is_participant(self, user_id: str) -> bool:
        """Whether ``user_id`` takes part in the conversation (may be written about)."""
        return user_id in self.participant_ids


def invisible_people(context: TurnContext) -> frozenset[str]:
    """Participants whose privacy is ``FULL``: nothing of theirs is remembered."""
    return frozenset(
        p.user_id for p in context.all_participants() if p.privacy == PrivacyLevel.FULL
    )


def privacy_to_look_up(
    context: TurnContext, owners: Collection[str], *, user_stored_full: bool | None
) -> frozenset[str]:
    """Whose stored privacy a recall of ``owners``' words must still read.

    Everyone's, but the turn's own user's when the turn already read theirs
    (``user_stored_full`` is not ``None``; :func:`stored_full_user` applies it).
    """
    if user_stored_full is None:
        return frozenset(owners)
    return frozenset(owners) - {context.user.user_id}


def stored_full_user(context: TurnContext, user_stored_full: bool | None) -> frozenset[str]:
    """The turn's own user, when kioku's directory marks them FULL now."""
    return frozenset({context.user.user_id}) if user_stored_full else frozenset()


def may_remember_message(
    owner_id: str | None, *, marked_private: bool, invisible: frozenset[str]
) -> bool:
    """Whether a chat message may enter (or be recalled from) short-term memory.

    Args:
        owner_id: the person the message belongs to (its author, or for a reply, the
            person answered); ``None`` when unknown.
        marked_private: the message was written in, or answers, a turn of a ``FULL``
            person (stamped when the turn ran, so a later privacy change cannot leak it).
        invisible: the ``FULL`` people known now (:func:`invisible_people`).
    """
    return not marked_private and (owner_id is None or owner_id not in invisible)


def has_personal_memories(person: Participant, bot_user_id: str) -> bool:
    """Whether personal memories of ``person`` may be shown at all (privacy, kind)."""
    return (
        person.privacy.allows_personal_memories
        and not person.is_bridge
        and person.user_id != bot_user_id
    )


def reach_of(context: TurnContext, *, personal_memories_enabled: bool = True) -> Reach:
    """What ``context``'s turn may see and change.

    ``personal_memories_enabled`` comes from the server's settings.
    """
    people = [p for p in context.all_participants() if p.user_id != context.bot_user_id]
    visible = (
        tuple(
            dict.fromkeys(
                p.user_id for p in people if has_personal_memories(p, context.bot_user_id)
            )
        )
        if personal_memories_enabled
        else ()
    )
    return Reach(
        server_key=context.memory_server_key,
        lineage_id=context.persona.lineage_id,
        user_id=context.user.user_id,
        participant_ids=frozenset(p.user_id for p in people),
        visible_owners=visible,
    )
