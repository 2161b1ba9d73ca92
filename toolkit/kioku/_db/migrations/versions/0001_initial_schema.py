"""Initial schema: pgvector, servers, users, members, personas, memories, history.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from collections.abc import Sequence
from typing import Any

import pgvector.sqlalchemy
import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute("CREATE EXTENSION IF NOT EXISTS vector")
    op.execute("CREATE SEQUENCE IF NOT EXISTS persona_lineage_seq START WITH 10000 MINVALUE 10000")
    _memory_history()
    _servers()
    _users()
    _memories()
    _personas()
    _server_members()


def _memory_history() -> None:
    op.create_table(
        "memory_history",
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("memory_id", sa.BigInteger(), nullable=False),
        sa.Column("action", sa.Text(), nullable=False),
        sa.Column("old_content", sa.Text(), nullable=True),
        sa.Column("new_content", sa.Text(), nullable=True),
        sa.Column("actor_user_id", sa.Text(), nullable=True),
        sa.Column("persona_id", sa.Integer(), nullable=True),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint(
            "action IN ('create', 'update', 'delete')", name=op.f("ck_memory_history_action")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_memory_history")),
    )
    op.create_index("ix_memory_history_memory_id", "memory_history", ["memory_id"], unique=False)


def _servers() -> None:
    op.create_table(
        "servers",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=True),
        sa.Column(
            "self_teaching_enabled", sa.Boolean(), server_default=sa.text("false"), nullable=False
        ),
        sa.Column(
            "personal_memories_enabled",
            sa.Boolean(),
            server_default=sa.text("true"),
            nullable=False,
        ),
        sa.Column(
            "private_channel_ids",
            postgresql.ARRAY(sa.Text()),
            server_default=sa.text("'{}'"),
            nullable=False,
        ),
        sa.Column(
            "stm_privacy_bypass", sa.Boolean(), server_default=sa.text("false"), nullable=False
        ),
        sa.Column("max_server_memories", sa.Integer(), nullable=True),
        sa.Column("max_personal_memories", sa.Integer(), nullable=True),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_servers")),
    )


def _users() -> None:
    op.create_table(
        "users",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("display_name", sa.Text(), nullable=False),
        sa.Column("global_name", sa.Text(), nullable=True),
        sa.Column("username", sa.Text(), nullable=True),
        sa.Column(
            "aliases", postgresql.ARRAY(sa.Text()), server_default=sa.text("'{}'"), nullable=False
        ),
        sa.Column("privacy_level", sa.SmallInteger(), server_default=sa.text("0"), nullable=False),
        sa.Column("is_bridge", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.Column(
            "cross_server_stm", sa.Boolean(), server_default=sa.text("false"), nullable=False
        ),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint("privacy_level IN (0, 1, 2)", name=op.f("ck_users_privacy_level")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_users")),
    )


def _memory_columns() -> list[sa.Column[Any]]:
    return [
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("scope", sa.Text(), nullable=False),
        sa.Column("server_id", sa.Text(), nullable=True),
        sa.Column("user_id", sa.Text(), nullable=True),
        sa.Column("persona_lineage_id", sa.BigInteger(), nullable=False),
        sa.Column("persona_id", sa.Integer(), nullable=True),
        sa.Column("created_by", sa.Text(), nullable=True),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("memory_type", sa.Text(), server_default="semantic", nullable=False),
        sa.Column("importance", sa.Float(), server_default=sa.text("0.5"), nullable=False),
        sa.Column("decay_rate", sa.Float(), server_default=sa.text("0.01"), nullable=False),
        sa.Column(
            "attributes",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
        ),
        sa.Column("embedding", pgvector.sqlalchemy.Vector(), nullable=True),
        sa.Column("access_count", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("last_accessed", sa.DateTime(timezone=True), nullable=True),
        sa.Column("status", sa.Text(), server_default="active", nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column(
            "updated_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
    ]


def _memories() -> None:
    op.create_table(
        "memories",
        *_memory_columns(),
        sa.CheckConstraint(
            "(scope = 'server' AND server_id IS NOT NULL)"
            " OR (scope = 'personal' AND user_id IS NOT NULL)",
            name=op.f("ck_memories_scope_owner"),
        ),
        sa.CheckConstraint(
            "memory_type IN ('episodic', 'semantic', 'procedural', 'strategic')",
            name=op.f("ck_memories_memory_type"),
        ),
        sa.CheckConstraint("scope IN ('server', 'personal')", name=op.f("ck_memories_scope")),
        sa.CheckConstraint("status IN ('active', 'archived')", name=op.f("ck_memories_status")),
        sa.CheckConstraint("decay_rate >= 0", name=op.f("ck_memories_decay_rate_range")),
        sa.CheckConstraint(
            "importance >= 0 AND importance <= 1", name=op.f("ck_memories_importance_range")
        ),
        sa.ForeignKeyConstraint(
            ["server_id"],
            ["servers.id"],
            name=op.f("fk_memories_server_id_servers"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_memories_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_memories")),
    )
    op.create_index(
        "ix_memories_personal_scope",
        "memories",
        ["user_id", "persona_lineage_id"],
        unique=False,
        postgresql_where=sa.text("scope = 'personal'"),
    )
    op.create_index(
        "ix_memories_server_scope",
        "memories",
        ["server_id", "persona_lineage_id"],
        unique=False,
        postgresql_where=sa.text("scope = 'server'"),
    )


def _personas() -> None:
    op.create_table(
        "personas",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("server_id", sa.Text(), nullable=True),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column(
            "lineage_id",
            sa.BigInteger(),
            server_default=sa.text("nextval('persona_lineage_seq')"),
            nullable=False,
        ),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint("lineage_id >= 10000", name=op.f("ck_personas_lineage_range")),
        sa.ForeignKeyConstraint(
            ["server_id"],
            ["servers.id"],
            name=op.f("fk_personas_server_id_servers"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_personas")),
    )


def _server_members() -> None:
    op.create_table(
        "server_members",
        sa.Column("server_id", sa.Text(), nullable=False),
        sa.Column("user_id", sa.Text(), nullable=False),
        sa.Column("nickname", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["server_id"],
            ["servers.id"],
            name=op.f("fk_server_members_server_id_servers"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_server_members_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("server_id", "user_id", name=op.f("pk_server_members")),
    )
    op.create_index("ix_server_members_user_id", "server_members", ["user_id"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_server_members_user_id", table_name="server_members")
    op.drop_table("server_members")
    op.drop_table("personas")
    op.drop_index(
        "ix_memories_server_scope",
        table_name="memories",
        postgresql_where=sa.text("scope = 'server'"),
    )
    op.drop_index(
        "ix_memories_personal_scope",
        table_name="memories",
        postgresql_where=sa.text("scope = 'personal'"),
    )
    op.drop_table("memories")
    op.drop_table("users")
    op.drop_table("servers")
    op.drop_index("ix_memory_history_memory_id", table_name="memory_history")
    op.drop_table("memory_history")
    op.execute("DROP SEQUENCE IF EXISTS persona_lineage_seq")
