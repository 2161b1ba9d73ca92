"""Target-user resolution (SPEC §6): pure matching over participants and directory members."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kioku._context import Participant, PrivacyLevel
from kioku._memory.text import normalise_name

MAX_CANDIDATES = 3


@dataclass(frozen=True, slots=True)
class DirectoryMember:
    """A server member as a :class:`UserDirectory` reports it."""

    user_id: str
    display_name: str
    nickname: str | None = None
    global_name: str | None = None
    username: str | None = None
    privacy: PrivacyLevel = PrivacyLevel.MINIMAL
    is_bridge: bool = False


@dataclass(frozen=True, slots=True)
class Person:
    """The person a name resolved to."""

    user_id: str
    display_name: str
    privacy: PrivacyLevel
    is_bridge: bool
    is_bot: bool


@dataclass(frozen=True, slots=True)
class Resolved:
    """Exactly one person matched."""

    person: Person


@dataclass(frozen=True, slots=True)
class Ambiguous:
    """Several people matched; ``candidates`` holds up to three display names."""

    candidates: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class NotFound:
    """Nobody matched."""


Resolution = Resolved | Ambiguous | NotFound


def _from_participant(p: Participant, bot_user_id: str) -> Person:
    return Person(p.user_id, p.display_name, p.privacy, p.is_bridge, p.user_id == bot_user_id)


def _from_member(m: DirectoryMember, bot_user_id: str) -> Person:
    return Person(m.user_id, m.display_name, m.privacy, m.is_bridge, m.user_id == bot_user_id)


def _ambiguous(people: Iterable[Person]) -> Ambiguous:
    return Ambiguous(tuple(p.display_name for p in people)[:MAX_CANDIDATES])


def match_participants(
    key: str, participants: Sequence[Participant], bot_user_id: str
) -> Resolution:
    """Match a normalised name against the conversation's participants.

    A single match on a display label wins over alias matches; otherwise one match
    resolves and several are ambiguous.
    """
    by_label: dict[str, Participant] = {}
    by_any: dict[str, Participant] = {}
    for p in participants:
        if normalise_name(p.display_name) == key:
            by_label.setdefault(p.user_id, p)
            by_any.setdefault(p.user_id, p)
        elif any(normalise_name(alias) == key for alias in p.aliases):
            by_any.setdefault(p.user_id, p)
    if len(by_label) == 1:
        return Resolved(_from_participant(next(iter(by_label.values())), bot_user_id))
    if len(by_any) == 1:
        return Resolved(_from_participant(next(iter(by_any.values())), bot_user_id))
    if by_any:
        return _ambiguous(_from_participant(p, bot_user_id) for p in by_any.values())
    return NotFound()


def match_directory(key: str, members: Sequence[DirectoryMember], bot_user_id: str) -> Resolution:
    """Match in stages: display name, then nickname, then global name, then username."""
    for stage in ("display_name", "nickname", "global_name", "username"):
        hits: dict[str, DirectoryMember] = {}
        for member in members:
            value: str | None = getattr(member, stage)
            if value is not None and normalise_name(value) == key:
                hits.setdefault(member.user_id, member)
        if len(hits) == 1:
            return Resolved(_from_member(next(iter(hits.values())), bot_user_id))
        if hits:
            return _ambiguous(_from_member(m, bot_user_id) for m in hits.values())
    return NotFound()
