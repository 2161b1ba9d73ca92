"""Which memories a search or a block may read: a plain description, no SQL.

:mod:`kioku._reach` decides it for a turn; :mod:`kioku._search.query` turns it into the
statement's filter.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Visibility:
    """Server memories of one lineage, plus personal memories of some users (SPEC §10).

    Which users and which server a turn may see is decided by :mod:`kioku._reach`.
    """

    server_key: str
    lineage_id: int
    personal_user_ids: tuple[str, ...] = ()
    include_server: bool = True
    """``False`` searches the personal memories only."""

    def kinds(self) -> tuple[str, ...]:
        """The scope kinds covered (``server``, ``personal``), in the order of the filters."""
        return (("server",) if self.include_server else ()) + (
            ("personal",) if self.personal_user_ids else ()
        )
