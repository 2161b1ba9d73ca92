"""The member directory an application provides for name resolution (SPEC §6)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from sqlalchemy.orm import Session, sessionmaker

from toolkit.accounts import AccountRepository
from toolkit.memory.resolution import DirectoryMember


@runtime_checkable
class UserDirectory(Protocol):
    """Where kioku looks up people who are not in the conversation.

    Implement it to resolve names against your platform's member list; kioku ships
    :class:`DatabaseUserDirectory`, backed by its own users and members tables.
    """

    def find_members(self, server_id: str, name_key: str) -> Sequence[DirectoryMember]:
        """Return members of ``server_id`` any of whose names may normalise to ``name_key``.

        Returning extra candidates is fine: kioku matches exactly afterwards.
        """
        ...

    def is_member(self, server_id: str, user_id: str) -> bool:
        """Whether ``user_id`` is currently a member of ``server_id``."""
        ...


class DatabaseUserDirectory:
    """:class:`UserDirectory` backed by kioku's ``users`` and ``server_members`` tables."""

    def __init__(self, session_factory: sessionmaker[Session]) -> None:
        """Use sessions from ``session_factory`` for each look-up."""
        self._sessions = session_factory

    def find_members(self, server_id: str, name_key: str) -> Sequence[DirectoryMember]:
        """Members of ``server_id`` with a name equal to ``name_key`` ignoring case."""
        with self._sessions() as session:
            return AccountRepository(session).find_members(server_id, name_key)

    def is_member(self, server_id: str, user_id: str) -> bool:
        """Whether a ``server_members`` row links the two."""
        with self._sessions() as session:
            return AccountRepository(session).is_member(server_id, user_id)
