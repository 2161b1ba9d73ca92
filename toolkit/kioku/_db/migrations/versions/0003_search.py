"""Search: full-text vector, embedding queue flag, and a meta table for the embedder.

The embedding column's dimension and its HNSW index are set by ``setup()`` from the
configured embedder (``toolkit/kioku/_db/vectors.py``), not here.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "memories",
        sa.Column("needs_embedding", sa.Boolean(), server_default=sa.text("false"), nullable=False),
    )
    op.add_column(
        "memories",
        sa.Column(
            "search_vector",
            postgresql.TSVECTOR(),
            sa.Computed("to_tsvector('english', content)", persisted=True),
            nullable=True,
        ),
    )
    op.create_index(
        "ix_memories_search_vector", "memories", ["search_vector"], postgresql_using="gin"
    )
    op.create_index(
        "ix_memories_needs_embedding",
        "memories",
        ["id"],
        postgresql_where=sa.text("needs_embedding"),
    )
    op.create_table(
        "kioku_meta",
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_kioku_meta")),
    )


def downgrade() -> None:
    op.drop_table("kioku_meta")
    op.drop_index("ix_memories_needs_embedding", table_name="memories")
    op.drop_index("ix_memories_search_vector", table_name="memories")
    op.drop_column("memories", "search_vector")
    op.drop_column("memories", "needs_embedding")
