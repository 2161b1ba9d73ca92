"""When a memory's event happened, defined once: ``memories.happened_at`` (issue #15).

``coalesce(event_time, created_at)``: its event time, else when it was saved. Search
filters on it (``since`` / ``until``), and every reader (context lines, search hits, the
MCP server, rankings) reads the column instead of working it out again.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-24
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add the generated column (a generated column cannot read ``event_time``, itself one)."""
    op.execute(
        "ALTER TABLE memories ADD COLUMN happened_at timestamptz "
        "GENERATED ALWAYS AS (coalesce(kioku_event_time(attributes), created_at)) STORED"
    )


def downgrade() -> None:
    """Drop it."""
    op.execute("ALTER TABLE memories DROP COLUMN happened_at")
