"""Short-term memory written in a channel a turn called private stays out of other channels.

A turn says its channel is private with ``TurnContext.is_private_channel``; the server's
``private_channel_ids`` are not the only private channels. The registry row keeps the
flag its entry carries, so other-channel recall (``select_other_channels``) leaves the
channel out like the server's private ones.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-25
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "stm_threads",
        sa.Column("private", sa.Boolean(), server_default=sa.text("false"), nullable=False),
    )


def downgrade() -> None:
    op.drop_column("stm_threads", "private")
