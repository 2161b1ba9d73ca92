"""Whether a memory write may happen: the one decision, pure (no database, no I/O).

Self-teaching, personal memories, reach and the scope's limit are decided by
:func:`decide` and nowhere else. The flows call it at their boundary, once the server's
settings are read, and answer what it refuses; the database function of a create
receives what it decided (the limit, whether an exact repeat may be named) and only does
what must be atomic: lock, count, insert. An update is one statement that reads the
settings itself (one round trip): it carries :func:`decisions_by_settings`, this
function's answers for each pair of settings it may read, and looks its answer up.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from kioku._context import TurnContext
from kioku._domain.settings import ServerSettings
from kioku._reach import reach_of

WriteKind = Literal["create", "update", "delete"]


@dataclass(frozen=True, slots=True)
class Write:
    """What a call would write, as far as the decision needs to know it."""

    kind: WriteKind
    owner_id: str | None = None
    """The owner of a personal memory; ``None`` for a server-wide one."""
    default_limit: int = 0
    """For a create: the scope's limit unless the server's settings override it."""


class Refusal(StrEnum):
    """Why a write may not happen."""

    DISABLED = "disabled"
    """Self-teaching is off: this answer wins over every other (SPEC §3 step 2, §4 step 1)."""
    CHECKS = "checks"
    """The write is not known (a check of the call refused it, or is still to run): the
    checks answer."""
    OUT_OF_REACH = "out_of_reach"
    """A personal memory this turn may not change: answered like an id that does not exist."""


@dataclass(frozen=True, slots=True)
class Decision:
    """What :func:`decide` decided."""

    refusal: Refusal | None
    """``None``: the write may happen."""
    personal_memories_enabled: bool
    shown: bool = False
    """Whether the turn sees the scope written to: only then may an answer name what the
    scope holds (an exact repeat, a near duplicate, a deleted text)."""
    limit: int = 0
    """For a create: how many memories the scope may hold."""

    @property
    def allowed(self) -> bool:
        """Whether the write may happen."""
        return self.refusal is None


def decide(write: Write | None, settings: ServerSettings, context: TurnContext) -> Decision:
    """Whether ``write`` may happen on a server with ``settings``, in ``context``'s turn.

    Args:
        write: what the call would write; ``None`` while it is not known (a check of the
            call failed, or is still to run), when only a disabled server's answer can win.
        settings: the server's settings (self-teaching, personal memories, limit overrides).
        context: the turn, whose reach (:mod:`kioku._reach`) decides which personal
            memories it sees and may change.

    Returns:
        The refusal, or what the write may do: the limit of a create's scope, and whether
        the turn sees the scope.
    """
    personal_on = settings.personal_memories_enabled
    if not settings.self_teaching_enabled:
        return Decision(Refusal.DISABLED, personal_on)
    if write is None:
        return Decision(Refusal.CHECKS, personal_on)
    if write.owner_id is None:
        limit = settings.max_server_memories or write.default_limit
        return Decision(None, personal_on, shown=True, limit=limit)
    reach = reach_of(context, personal_memories_enabled=personal_on)
    if write.kind != "create" and not reach.may_change_personal(write.owner_id):
        return Decision(Refusal.OUT_OF_REACH, personal_on)
    limit = settings.max_personal_memories or write.default_limit
    return Decision(None, personal_on, shown=reach.shows_personal(write.owner_id), limit=limit)


def decisions_by_settings(write: Write, context: TurnContext) -> tuple[bool, ...]:
    """Whether :func:`decide` allows ``write`` under each pair of settings a statement reads.

    Four answers, for self-teaching off and on (in that order), each with personal
    memories off and on: a statement reading the settings finds its answer at
    ``1 + 2 * self_teaching_enabled + personal_memories_enabled`` (SQL counts from 1).
    """
    return tuple(
        decide(
            write,
            ServerSettings(self_teaching_enabled=teaching, personal_memories_enabled=personal),
            context,
        ).allowed
        for teaching in (False, True)
        for personal in (False, True)
    )
