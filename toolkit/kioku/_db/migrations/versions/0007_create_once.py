"""Creates happen once (issue #12).

``kioku_create_memory`` answers ``already_saved`` with the existing memory's id when the
scope already holds a memory with exactly this content (for a person, their global
memories included, as their limit counts them). Checked after the scope's lock,
so two identical creates at once save one row; and a create retried after its reply was
lost finds the row the first attempt committed instead of saving a duplicate.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23
"""

import importlib
from collections.abc import Sequence

from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_previous = importlib.import_module("kioku._db.migrations.versions.0006_privacy_and_forgetting")

_LOCKED = "    PERFORM pg_advisory_xact_lock(hashtextextended(p_lock_key, 0));\n"
_SAME_CONTENT = """
    SELECT m.id INTO memory_id FROM memories m
    WHERE m.status = 'active' AND m.scope = p_scope
      AND m.persona_lineage_id IN (p_lineage, CASE WHEN p_scope = 'personal' THEN 0 END)
      AND ((p_scope = 'server' AND m.server_id = p_owner_id)
           OR (p_scope = 'personal' AND m.user_id = p_owner_id))
      AND m.content = p_content
    ORDER BY m.id LIMIT 1;
    IF memory_id IS NOT NULL THEN
        outcome := 'already_saved';
        RETURN;
    END IF;
"""
assert _LOCKED in _previous.CREATE_MEMORY, "0006's create function changed shape"
CREATE_MEMORY = _previous.CREATE_MEMORY.replace(
    "CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1
).replace(_LOCKED, _LOCKED + _SAME_CONTENT, 1)


def upgrade() -> None:
    op.execute(CREATE_MEMORY)


def downgrade() -> None:
    op.execute(_previous.CREATE_MEMORY.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1))
