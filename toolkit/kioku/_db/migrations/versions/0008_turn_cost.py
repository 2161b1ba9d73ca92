"""Cheaper turns (issue #13).

- ``memory_access``: access counts live in their own table, written by the batched
  flush with an upsert. Before, the flush updated ``memories`` rows: it held their row
  locks against the update tool and added entries to every index of ``memories``.
- ``kioku_stm_lock(threads, expected)``: takes the short-term-memory write locks (one
  transaction advisory lock per thread, in thread-id order, the keys of
  ``kioku._stm.entries.WRITE_LOCK_SPACE``) and returns the threads' registry versions in
  one round trip. With ``expected`` it instead raises SQLSTATE ``KIO01`` when a
  version differs, so a write computed from cached entries can be sent in the same
  round trip as its lock and is undone when another writer came first.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-23
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

STM_LOCK = """
CREATE OR REPLACE FUNCTION kioku_stm_lock(p_threads text[], p_expected timestamptz[] DEFAULT NULL)
RETURNS TABLE(thread_id text, last_updated timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
    t text;
BEGIN
    FOR t IN SELECT DISTINCT u FROM unnest(p_threads) AS u ORDER BY u LOOP
        PERFORM pg_advisory_xact_lock(7039343, hashtext(t));
    END LOOP;
    IF p_expected IS NOT NULL AND EXISTS (
        SELECT 1 FROM unnest(p_threads, p_expected) AS e(id, version)
        LEFT JOIN stm_threads s ON s.thread_id = e.id
        WHERE s.last_updated IS DISTINCT FROM e.version
    ) THEN
        RAISE EXCEPTION 'short-term memory changed since it was read' USING ERRCODE = 'KIO01';
    END IF;
    RETURN QUERY
        SELECT e.id, s.last_updated FROM unnest(p_threads) AS e(id)
        LEFT JOIN stm_threads s ON s.thread_id = e.id;
END;
$$;
"""


def upgrade() -> None:
    op.create_table(
        "memory_access",
        sa.Column(
            "memory_id",
            sa.BigInteger(),
            sa.ForeignKey("memories.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("access_count", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("last_accessed", sa.DateTime(timezone=True), nullable=False),
    )
    op.execute(
        "INSERT INTO memory_access (memory_id, access_count, last_accessed) "
        "SELECT id, access_count, COALESCE(last_accessed, now()) FROM memories "
        "WHERE access_count > 0 OR last_accessed IS NOT NULL"
    )
    op.drop_column("memories", "access_count")
    op.drop_column("memories", "last_accessed")
    op.execute(STM_LOCK)


def downgrade() -> None:
    op.execute("DROP FUNCTION kioku_stm_lock(text[], timestamptz[])")
    op.add_column(
        "memories",
        sa.Column("access_count", sa.Integer(), nullable=False, server_default="0"),
    )
    op.add_column("memories", sa.Column("last_accessed", sa.DateTime(timezone=True)))
    op.execute(
        "UPDATE memories m SET access_count = a.access_count, last_accessed = a.last_accessed "
        "FROM memory_access a WHERE a.memory_id = m.id"
    )
    op.drop_table("memory_access")
