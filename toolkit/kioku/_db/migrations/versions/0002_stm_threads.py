"""Registry of short-term-memory threads (the checkpoints live in LangGraph's tables).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "stm_threads",
        sa.Column("thread_id", sa.Text(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("owner_id", sa.Text(), nullable=False),
        sa.Column("channel_id", sa.Text(), nullable=False),
        sa.Column("lineage_id", sa.BigInteger(), nullable=False),
        sa.Column("server_id", sa.Text(), nullable=True),
        sa.Column("parent_channel_id", sa.Text(), nullable=True),
        sa.Column("has_summary", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.Column("last_updated", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("kind IN ('server', 'user')", name=op.f("ck_stm_threads_kind")),
        sa.PrimaryKeyConstraint("thread_id", name=op.f("pk_stm_threads")),
    )
    op.create_index(
        "ix_stm_threads_owner_recent",
        "stm_threads",
        ["kind", "owner_id", "lineage_id", sa.text("last_updated DESC")],
        unique=False,
    )
    op.create_index("ix_stm_threads_last_updated", "stm_threads", ["last_updated"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_stm_threads_last_updated", table_name="stm_threads")
    op.drop_index("ix_stm_threads_owner_recent", table_name="stm_threads")
    op.drop_table("stm_threads")
