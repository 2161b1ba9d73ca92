"""The memory space of one-user apps learns without a row (issue #14).

``TurnContext.for_user`` puts every turn in the server ``default``. Like a direct
message, that server lets the model write long-term memories until an administrator
stores settings for it; every other server without a row still does not. The settings
and their defaults stay defined here alone (``kioku_server_settings``, migration 0006).

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-24
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

DEFAULT_SERVER_KEY = "default"
"""``kioku.context.DEFAULT_SERVER_ID`` (a test keeps the two equal)."""


def _settings(self_teaching_without_row: str) -> str:
    return f"""
CREATE OR REPLACE FUNCTION kioku_server_settings(p_key text, p_is_dm boolean,
    OUT stored boolean,
    OUT self_teaching_enabled boolean,
    OUT personal_memories_enabled boolean,
    OUT private_channel_ids text[],
    OUT stm_privacy_bypass boolean,
    OUT max_server_memories integer,
    OUT max_personal_memories integer
) LANGUAGE sql STABLE AS $$
    SELECT s.id IS NOT NULL,
           CASE WHEN s.id IS NULL THEN {self_teaching_without_row}
                ELSE s.self_teaching_enabled END,
           COALESCE(s.personal_memories_enabled, true),
           COALESCE(s.private_channel_ids, '{{}}'),
           COALESCE(s.stm_privacy_bypass, false),
           NULLIF(s.max_server_memories, 0),
           NULLIF(s.max_personal_memories, 0)
    FROM (SELECT p_key AS key) AS wanted LEFT JOIN servers AS s ON s.id = wanted.key
$$;
"""


def upgrade() -> None:
    """Self-teaching on without a row in direct messages and in the default server."""
    op.execute(_settings(f"p_is_dm OR p_key = '{DEFAULT_SERVER_KEY}'"))


def downgrade() -> None:
    """Self-teaching on without a row in direct messages only (migration 0006)."""
    op.execute(_settings("p_is_dm"))
