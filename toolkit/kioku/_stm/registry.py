"""The ``stm_threads`` table: short-term-memory entries, how fresh they are, and their state."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from psycopg.types.json import Jsonb
from sqlalchemy import delete, select, text
from sqlalchemy.orm import Session

from kioku._db.models import StmThread
from kioku._stm.model import ScopeKind, StmCandidate, StmEntry, StmKey

RECORD_SQL = """
INSERT INTO stm_threads AS t (thread_id, kind, owner_id, channel_id, lineage_id, server_id,
                              parent_channel_id, has_summary, last_updated, private, entry)
SELECT * FROM unnest(%(thread_id)b::text[], %(kind)b::text[], %(owner_id)b::text[],
                     %(channel_id)b::text[], %(lineage_id)b::bigint[], %(server_id)b::text[],
                     %(parent_channel_id)b::text[], %(has_summary)b::boolean[],
                     %(last_updated)b::timestamptz[], %(private)b::boolean[],
                     %(entry)b::jsonb[])
ON CONFLICT (thread_id) DO UPDATE SET
    kind = excluded.kind, owner_id = excluded.owner_id, channel_id = excluded.channel_id,
    lineage_id = excluded.lineage_id, server_id = excluded.server_id,
    parent_channel_id = excluded.parent_channel_id, has_summary = excluded.has_summary,
    last_updated = excluded.last_updated, private = excluded.private, entry = excluded.entry
"""
"""Rows of written entries, one statement for any number (psycopg parameters).

The parameters go in binary (``%(name)b``): as text, every quote of the entries' JSON
would be escaped one by one, in Python, on every write."""

STORED_SQL = "SELECT thread_id, entry FROM stm_threads WHERE thread_id = ANY(%(threads)s)"
"""The stored state of the entries among ``threads`` (psycopg parameters)."""


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
        "private": [e.private for e in entries],
        "entry": [Jsonb(e.to_state()) for e in entries],
    }


THREAD_VERSION_SQL = "SELECT last_updated FROM stm_threads WHERE thread_id = :thread"
"""``last_updated`` of the thread bound as ``:thread``: a subquery other reads embed."""


RECENT_COLUMNS = (
    "kind",
    "owner_id",
    "channel_id",
    "server_id",
    "parent_channel_id",
    "last_updated",
    "private",
)
"""The columns :data:`RECENT_SQL` selects, in order."""


PARENT_PRIVATE_SQL = (
    "(parent_channel_id IS NOT NULL AND server_id IS NOT NULL AND EXISTS ("
    "SELECT 1 FROM stm_threads AS parent WHERE parent.kind = 'server' AND parent.private "
    "AND parent.owner_id = stm_threads.server_id "
    "AND parent.channel_id = stm_threads.parent_channel_id))"
)
"""Whether a turn called the parent channel of a thread's entry private: a private
channel's threads are private too, for as long as the channel's server-wide entry says so
(served by ``ix_stm_threads_private_channels``)."""
RECENT_SQL = (
    "SELECT "
    + ", ".join(
        f"(private OR {PARENT_PRIVATE_SQL}) AS private" if c == "private" else c
        for c in RECENT_COLUMNS
    )
    + " FROM stm_threads WHERE ("
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
"""Recallable threads of a turn (:class:`RecentThreads`): a query other reads embed."""
_RECENT = text(RECENT_SQL)


@dataclass(frozen=True, slots=True)
class RecentThreads:
    """Which registry rows a turn may recall from (:data:`RECENT_SQL`'s parameters).

    Unexpired entries of ``lineage_id`` other than ``exclude_channel``, newest first: the
    server's (``server_id``), and the user's own: those of other servers only with the
    cross-server opt-in (``cross_server``, or when ``None`` the ``users`` row's flag, read
    in the same statement); in a DM (``server_id`` is ``None``) also their DM entries.
    Served by the ``(kind, owner_id, lineage_id, last_updated DESC)`` index.
    """

    user_id: str
    server_id: str | None
    cross_server: bool | None
    lineage_id: int
    exclude_channel: str
    ttl_cutoff: datetime
    summary_cutoff: datetime
    limit: int

    def params(self) -> dict[str, Any]:
        """The statement's parameters."""
        return {
            "user_id": self.user_id,
            "server_id": self.server_id,
            "cross_server": self.cross_server,
            "lineage_id": self.lineage_id,
            "exclude_channel": self.exclude_channel,
            "ttl_cutoff": self.ttl_cutoff,
            "summary_cutoff": self.summary_cutoff,
            "limit": self.limit,
        }

    def candidates(self, rows: Iterable[Sequence[Any]]) -> list[StmCandidate]:
        """Rows of :data:`RECENT_SQL` (:data:`RECENT_COLUMNS`) as candidates, newest first."""
        found = [
            StmCandidate(
                StmKey(cast(ScopeKind, kind), owner, channel, self.lineage_id),
                server_id,
                parent,
                updated,
                bool(private),
            )
            for kind, owner, channel, server_id, parent, updated, private in rows
        ]
        return sorted(found, key=lambda c: c.last_updated, reverse=True)


class StmRegistry:
    """Reads and writes the registry in the caller's session (the caller commits)."""

    def __init__(self, session: Session) -> None:
        """Work inside ``session``."""
        self.session = session

    def record(self, entries: Sequence[StmEntry]) -> None:
        """Insert or replace the rows of ``entries``."""
        self.session.connection().exec_driver_sql(RECORD_SQL, record_params(entries))

    def stored(self, keys: Sequence[StmKey]) -> dict[str, StmEntry]:
        """The stored entries among ``keys``, by thread id (missing ones left out)."""
        by_thread = {key.thread_id: key for key in keys}
        rows = self.session.connection().exec_driver_sql(STORED_SQL, {"threads": list(by_thread)})
        found = (StmEntry.from_state(by_thread[thread], state) for thread, state in rows)
        return {entry.key.thread_id: entry for entry in found if entry is not None}

    def delete_idle(self, cutoff: datetime) -> int:
        """Delete the entries not updated since ``cutoff``; how many there were."""
        deleted = self.session.execute(delete(StmThread).where(StmThread.last_updated < cutoff))
        return int(getattr(deleted, "rowcount", 0))

    def recent(self, query: RecentThreads) -> list[StmCandidate]:
        """The registry rows ``query`` selects, newest first."""
        return query.candidates(self.session.execute(_RECENT, query.params()).all())

    def version(self, thread_id: str) -> datetime | None:
        """``last_updated`` of one thread (``None`` when unknown)."""
        version: datetime | None = self.session.scalar(
            text(THREAD_VERSION_SQL), {"thread": thread_id}
        )
        return version

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
            StmThread.private,
        )
        if since is not None:
            statement = statement.where(StmThread.last_updated >= since)
        return [
            StmCandidate(
                StmKey(cast(ScopeKind, kind), owner, channel, lineage),
                server_id,
                parent,
                updated,
                private,
            )
            for kind, owner, channel, lineage, server_id, parent, updated, private in (
                self.session.execute(statement)
            )
        ]
