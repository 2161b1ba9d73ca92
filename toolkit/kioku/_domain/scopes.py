"""The scopes memories live in: a server's (per persona lineage) and a person's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from kioku._context import GLOBAL_LINEAGE
from kioku._domain.visibility import Visibility

VersionKey = tuple[str, str, int]
"""A ``memory_counts`` key: ``(scope, owner, lineage)``."""


@dataclass(frozen=True, slots=True)
class ServerScope:
    """Server-wide memories of one persona lineage."""

    server_id: str
    lineage_id: int

    kind: ClassVar[Literal["server"]] = "server"
    """The ``scope`` column of its memories."""

    @property
    def owner_id(self) -> str:
        """The key its memories are stored under (the server)."""
        return self.server_id

    @property
    def lock_key(self) -> str:
        """Text hashed into the advisory lock that serialises writers of this scope."""
        return f"server:{self.server_id}:{self.lineage_id}"

    def visibility(self) -> Visibility:
        """The filter selecting this scope's memories."""
        return Visibility(self.server_id, self.lineage_id)

    def version_keys(self) -> tuple[tuple[str, str, int], ...]:
        """The ``memory_counts`` rows whose versions tell whether the scope changed."""
        return (("server", self.server_id, self.lineage_id),)


@dataclass(frozen=True, slots=True)
class PersonalScope:
    """Personal memories of one user for one lineage (global ones included on reads)."""

    user_id: str
    lineage_id: int

    kind: ClassVar[Literal["personal"]] = "personal"
    """The ``scope`` column of its memories."""

    @property
    def owner_id(self) -> str:
        """The key its memories are stored under (the user)."""
        return self.user_id

    @property
    def lock_key(self) -> str:
        """Text hashed into the advisory lock; globals share it, as they count too."""
        return f"personal:{self.user_id}"

    def visibility(self) -> Visibility:
        """The filter selecting this scope's memories (global ones included)."""
        return Visibility("", self.lineage_id, (self.user_id,), include_server=False)

    def version_keys(self) -> tuple[tuple[str, str, int], ...]:
        """The ``memory_counts`` rows whose versions tell whether the scope changed."""
        return (
            ("personal", self.user_id, self.lineage_id),
            ("personal", self.user_id, GLOBAL_LINEAGE),
        )
