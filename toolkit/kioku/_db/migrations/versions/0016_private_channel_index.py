"""Threads of a channel a turn called private are private too: find such channels fast.

Other-channel recall asks, for each thread, whether its parent channel's server-wide entry
is private; this small partial index holds those entries alone.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-25
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index(
        "ix_stm_threads_private_channels",
        "stm_threads",
        ["owner_id", "channel_id"],
        postgresql_where=sa.text("kind = 'server' AND private"),
    )


def downgrade() -> None:
    op.drop_index("ix_stm_threads_private_channels", table_name="stm_threads")
