"""The ``stm_threads`` index: which short-term-memory threads exist and how fresh they are."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import delete, select, text
from sqlalchemy.orm import Session

from kioku._db.models import StmThread
from kioku._stm.model import ScopeKind, StmCandidate, StmEntry, StmKey

RECORD_SQL = """
INSERT INTO stm_threads AS t (thread_id, kind, owner_id, channel_id, lineage_id, server_id,
                              parent_channel_id, has_summary, last_updated)
SELECT * FROM unnest(%(thread_id)s::text[], %(kind)s::text[], %(owner_id)s::text[],
                     %(channel_id)s::text[], %(lineage_id)s::bigint[], %(server_id)s::text[],
                     %(parent_channel_id)s::text[], %(has_summary)s::boolean[],
                     %(last_updated)s::timestamptz[])
ON CONFLICT (thread_id) DO UPDATE SET
    kind = excluded.kind, owner_id = excluded.owner_id, channel_id = excluded.channel_id,
    lineage_id = excluded.lineage_id, server_id = excluded.server_id,
    parent_channel_id = excluded.parent_channel_id, has_summary = excluded.has_summary,
    last_updated = excluded.last_updated
"""
"""Registry rows of written entries, one statement for any number (psycopg parameters)."""


def record_params(entries: Sequence[StmEntry]) -> dict[str, list[Any]]:
    """:data:`RECORD_SQL`'s parameters for ``entries``."""
    return {
        "thread_id": [e.key.thread_id for e in entries],
        "kind": [e.key.kind for e in entries],
        "owner_id": [e.key.owner_id for e in entries],
        "channel_id": [e.key.channel_id for e in entries],
        "lineage_id": [e.key.lineage_id for e in entries],
        "server_id": [e.server_id for e in entries],
        "parent_channel_id": [e.parent_channel_id for e in entries],
        "has_summary": [bool(e.summary) for e in entries],
        "last_updated": [e.last_updated for e in entries],
    }


THREAD_VERSION_SQL = "SELECT last_updated FROM stm_threads WHERE thread_id = :thread"
"""``last_updated`` of the thread bound as ``:thread``: a subquery other reads embed."""


_RECENT = text(
    "SELECT kind, owner_id, channel_id, server_id, parent_channel_id, last_updated "
    "FROM stm_threads WHERE ("
    "(kind = 'user' AND owner_id = :user_id AND ("
    "COALESCE(CAST(:cross_server AS boolean), EXISTS ("
    "SELECT 1 FROM users WHERE id = :user_id AND cross_server_stm)) "
    "OR (CAST(:server_id AS text) IS NULL AND server_id IS NULL))) "
    "OR (kind = 'server' AND owner_id = :server_id)) "
    "AND lineage_id = :lineage_id AND channel_id <> :exclude_channel "
    "AND last_updated >= LEAST(:ttl_cutoff, :summary_cutoff) "
    "AND last_updated >= CASE WHEN has_summary THEN :summary_cutoff ELSE :ttl_cutoff END "
    "ORDER BY last_updated DESC LIMIT :limit"
)
"""Recallable threads of a turn (see :meth:`StmRegistry.recent`)."""


class StmRegistry:
    """Reads and writes the registry in the caller's session (the caller commits)."""

    def __init__(self, session: Session) -> None:
        """Work inside ``session``."""
        self.session = session

    def record(self, entries: Sequence[StmEntry]) -> None:
        """Insert or refresh the rows of ``entries``' threads."""
        self.session.connection().exec_driver_sql(RECORD_SQL, record_params(entries))

    def recent(
        self,
        *,
        user_id: str,
        server_id: str | None,
        cross_server: bool | None,
        lineage_id: int,
        exclude_channel: str,
        now: datetime,
        ttl: timedelta,
        summary_ttl: timedelta,
        limit: int,
    ) -> list[StmCandidate]:
        """Unexpired entries of ``lineage_id`` other than ``exclude_channel``, newest first.

        The server's entries (``server_id``), and the user's own: those of other servers
        only with the cross-server opt-in (``cross_server``, or when ``None`` the ``users``
        row's flag, read in the same statement); in a DM (``server_id`` is ``None``) also
        their DM entries. Served by the ``(kind, owner_id, lineage_id, last_updated DESC)``
        index.
        """
        rows = self.session.execute(
            _RECENT,
            {
                "user_id": user_id,
                "server_id": server_id,
                "cross_server": cross_server,
                "lineage_id": lineage_id,
                "exclude_channel": exclude_channel,
                "ttl_cutoff": now - ttl,
                "summary_cutoff": now - summary_ttl,
                "limit": limit,
            },
        ).all()
        return [
            StmCandidate(
                StmKey(cast(ScopeKind, kind), owner, channel, lineage_id),
                row_server_id,
                parent,
                updated,
            )
            for kind, owner, channel, row_server_id, parent, updated in rows
        ]

    def version(self, thread_id: str) -> datetime | None:
        """``last_updated`` of one thread (``None`` when unknown)."""
        version: datetime | None = self.session.scalar(
            text(THREAD_VERSION_SQL), {"thread": thread_id}
        )
        return version

    def versions(self, thread_ids: Sequence[str]) -> dict[str, datetime]:
        """``last_updated`` of each known thread among ``thread_ids``, in one query."""
        rows = self.session.execute(
            select(StmThread.thread_id, StmThread.last_updated).where(
                StmThread.thread_id.in_(list(thread_ids))
            )
        )
        return {thread_id: last_updated for thread_id, last_updated in rows}

    def idle_since(self, cutoff: datetime) -> list[str]:
        """Threads not updated since ``cutoff``."""
        return list(
            self.session.scalars(select(StmThread.thread_id).where(StmThread.last_updated < cutoff))
        )

    def updated_since(self, since: datetime) -> list[str]:
        """Threads updated at or after ``since``."""
        return list(
            self.session.scalars(select(StmThread.thread_id).where(StmThread.last_updated >= since))
        )

    def forget(self, thread_ids: Sequence[str]) -> None:
        """Remove registry rows."""
        if thread_ids:
            self.session.execute(delete(StmThread).where(StmThread.thread_id.in_(thread_ids)))

    def entries(self, *, since: datetime | None = None) -> list[StmCandidate]:
        """Every registered entry (updated at or after ``since`` when given)."""
        statement = select(
            StmThread.kind,
            StmThread.owner_id,
            StmThread.channel_id,
            StmThread.lineage_id,
            StmThread.server_id,
            StmThread.parent_channel_id,
            StmThread.last_updated,
        )
        if since is not None:
            statement = statement.where(StmThread.last_updated >= since)
        return [
            StmCandidate(
                StmKey(cast(ScopeKind, kind), owner, channel, lineage), server_id, parent, updated
            )
            for kind, owner, channel, lineage, server_id, parent, updated in self.session.execute(
                statement
            )
        ]
