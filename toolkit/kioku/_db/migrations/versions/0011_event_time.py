"""When a memory's event happened: ``memories.event_time`` (issue #15).

A memory may say when what it records happened (``attributes.event_time``, an ISO 8601
time with its offset: the tools' ``event_time`` argument, an episodic memory's field).
The column is generated from it, so the time is defined once; a memory without one
happened when it was saved (readers use ``coalesce(event_time, created_at)``).

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-24
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

EVENT_TIME_FUNCTION = """
CREATE OR REPLACE FUNCTION kioku_event_time(attributes jsonb) RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN (attributes ->> 'event_time')::timestamptz
"""
"""Immutable because kioku stores the time with its offset (the cast then ignores
``TimeZone``); a generated column needs that."""


def upgrade() -> None:
    """Add the function and the generated column."""
    op.execute(EVENT_TIME_FUNCTION)
    op.execute(
        "ALTER TABLE memories ADD COLUMN event_time timestamptz "
        "GENERATED ALWAYS AS (kioku_event_time(attributes)) STORED"
    )


def downgrade() -> None:
    """Drop them."""
    op.execute("ALTER TABLE memories DROP COLUMN event_time")
    op.execute("DROP FUNCTION kioku_event_time(jsonb)")
