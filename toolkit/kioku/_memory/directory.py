"""The member directory an application provides for name resolution (SPEC §6)."""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from typing import Protocol, runtime_checkable

from sqlalchemy.orm import Session

from kioku._accounts import AccountRepository
from kioku._memory.resolution import DirectoryMember


@runtime_checkable
class UserDirectory(Protocol):
    """Where kioku looks up people who are not in the conversation.

    A name found only here can be written about server-wide (a bridged user), but the
    person's personal memories stay out of the turn's reach (see :mod:`kioku._reach`).
    Implement it to resolve names against your platform's member list and pass it to
    ``KiokuStore(..., directory=...)``; without one, kioku uses its own users and
    members tables (:class:`DatabaseUserDirectory`).
    """

    def find_members(
        self, server_id: str, name_key: str
    ) -> Sequence[DirectoryMember] | Awaitable[Sequence[DirectoryMember]]:
        """Return members of ``server_id`` any of whose names may normalise to ``name_key``.

        Returning extra candidates is fine: kioku matches exactly afterwards (on
        :func:`kioku._memory.text.normalise_name` of each name). It may be ``async def``:
        kioku then awaits it on the event loop of the async call that needs it.
        """
        ...


class DatabaseUserDirectory:
    """:class:`UserDirectory` over kioku's ``users`` and ``server_members`` tables.

    It works inside the session of the tool call that uses it, so look-ups share the
    call's transaction.
    """

    def __init__(self, session: Session) -> None:
        """Look members up inside ``session``."""
        self._accounts = AccountRepository(session)

    def find_members(self, server_id: str, name_key: str) -> Sequence[DirectoryMember]:
        """Members of ``server_id`` with a name equal to ``name_key`` (NFKC, any case)."""
        return self._accounts.find_members(server_id, name_key)
