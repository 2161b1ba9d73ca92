"""Whom a server-wide memory is about (``memory_subjects``), kept when memories merge.

The link is written with the create itself (``kioku._memory.repository``); erasure reads
it (``kioku._erasure``).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import text
from sqlalchemy.orm import Session

_CARRY_SUBJECTS = text(
    "INSERT INTO memory_subjects (memory_id, user_id, server_id) "
    "SELECT :keep, user_id, server_id FROM memory_subjects "
    "WHERE memory_id = ANY(CAST(:merged AS bigint[])) ON CONFLICT DO NOTHING"
)


def carry_subjects(session: Session, keep: int, merged: Sequence[int]) -> None:
    """Record on ``keep`` the bridged users the ``merged`` memories were saved about.

    A consolidation merge writes their text into ``keep``: erasing such a user must find
    it there too. The merged memories keep their own links (erasure scrubs their history).
    """
    session.execute(_CARRY_SUBJECTS, {"keep": keep, "merged": list(merged)})
