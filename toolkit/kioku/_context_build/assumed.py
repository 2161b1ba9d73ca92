"""What a build may assume of its turn state, to send its rankings with it (issue #36).

From a server's second build on, the memory blocks are ranked before the turn state is
read, on what the last build for the server read (settings, recorded embedder) and the
memory windows this process holds, so that the rankings go out in the turn state's round
trip (:meth:`kioku._context_build.stages.MemoryStages.run_assumed`). They are kept only when
the state read shows that very basis (:func:`same_basis`).
"""

from __future__ import annotations

from dataclasses import dataclass

from kioku._context import TurnContext
from kioku._context_build.loader import TurnState, scopes_of
from kioku._deps import KiokuDeps
from kioku._domain.settings import ServerSettings
from kioku._reach import reach_of


@dataclass(frozen=True)
class Basis:
    """What a server's last build read that the next one may assume."""

    settings: ServerSettings
    embedder: tuple[str, int] | None


class TurnBases:
    """The settings and recorded embedder each server's last build read (bounded).

    What the next build for the server may assume, to send its rankings with the turn
    state that checks it (:func:`same_basis`).
    """

    MAX_SERVERS = 4096
    """Servers (and DMs) kept; all are dropped when it is exceeded."""

    def __init__(self) -> None:
        self._bases: dict[tuple[str, bool], Basis] = {}

    def get(self, context: TurnContext) -> Basis | None:
        """What the last build for ``context``'s server read."""
        return self._bases.get((context.memory_server_key, context.is_dm))

    def remember(self, context: TurnContext, state: TurnState) -> None:
        """Keep ``state``'s settings and embedder for ``context``'s server."""
        if len(self._bases) >= self.MAX_SERVERS:
            self._bases.clear()
        basis = Basis(state.settings, state.embedder)
        self._bases[(context.memory_server_key, context.is_dm)] = basis


def assumed_state(bases: TurnBases, store: KiokuDeps, context: TurnContext) -> TurnState | None:
    """What ``context``'s turn state may be assumed to be, before it is read.

    The settings and recorded embedder the last build for the server read, and the
    versions this process holds the memory windows of the turn's reach at (``None``: no
    build for the server yet, or a window is not held).
    """
    basis = bases.get(context)
    if basis is None:
        return None
    personal = basis.settings.personal_memories_enabled
    server, people = scopes_of(reach_of(context, personal_memories_enabled=personal))
    versions = store.windows.held_versions([server, *people.values()])
    if versions is None:
        return None
    return TurnState(basis.settings, versions, None, embedder=basis.embedder)


def same_basis(assumed: TurnState, state: TurnState) -> bool:
    """Whether ``state`` has ``assumed``'s settings, embedder and (held) scope versions."""
    return (
        state.settings == assumed.settings
        and state.embedder == assumed.embedder
        and all(state.versions.get(key) == version for key, version in assumed.versions.items())
    )
