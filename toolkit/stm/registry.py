"""The ``stm_threads`` index: which short-term-memory threads exist and how fresh they are."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import ColumnElement, and_, delete, or_, select, text
from sqlalchemy.orm import Session

from toolkit.db.models import StmThread
from toolkit.stm.model import ScopeKind, StmCandidate, StmEntry, StmKey

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
        owners: Sequence[tuple[ScopeKind, str, ColumnElement[bool] | None]],
        lineage_id: int,
        *,
        exclude_channel: str,
        now: datetime,
        ttl: timedelta,
        summary_ttl: timedelta,
        limit: int,
    ) -> list[StmCandidate]:
        """Unexpired entries of ``owners``, newest first, other than ``exclude_channel``.

        ``owners``: (kind, owner id, a further condition on the owner's rows or ``None``).

        Served by the ``(kind, owner_id, lineage_id, last_updated DESC)`` index.
        """
        if not owners:
            return []
        fresh = or_(
            and_(StmThread.has_summary, StmThread.last_updated >= now - summary_ttl),
            and_(~StmThread.has_summary, StmThread.last_updated >= now - ttl),
        )
        rows = self.session.execute(
            select(
                StmThread.kind,
                StmThread.owner_id,
                StmThread.channel_id,
                StmThread.server_id,
                StmThread.parent_channel_id,
                StmThread.last_updated,
            )
            .where(
                or_(
                    *(
                        and_(
                            StmThread.kind == k,
                            StmThread.owner_id == o,
                            *([] if c is None else [c]),
                        )
                        for k, o, c in owners
                    )
                ),
                StmThread.lineage_id == lineage_id,
                StmThread.channel_id != exclude_channel,
                StmThread.last_updated >= now - max(ttl, summary_ttl),
                fresh,
            )
            .order_by(StmThread.last_updated.desc())
            .limit(limit)
        ).all()
        return [
            StmCandidate(
                StmKey(cast(ScopeKind, kind), owner, channel, lineage_id),
                server_id,
                parent,
                updated,
            )
            for kind, owner, channel, server_id, parent, updated in rows
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
