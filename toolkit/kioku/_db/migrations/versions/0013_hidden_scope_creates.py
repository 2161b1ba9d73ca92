"""A create into a scope the turn cannot see looks for no repeat (issue #15).

``kioku_create_memory`` answered an exact repeat with ``already_saved`` and the existing
memory's id, before checking the limit. For a scope the turn may not see (another person's
personal memories where personal memories are off) that confirmed what a hidden memory
says: by the old id, or by saving where a full scope refuses everything else. The function
gains ``p_check_repeat``; the caller turns it off for such scopes (``kioku._memory.create``
asks :mod:`kioku._reach`), so the create is a plain insert within the limit. The previous
function (18 arguments) stays for processes of the previous version during a rolling
upgrade.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-24
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

CREATE_MEMORY = """
CREATE OR REPLACE FUNCTION kioku_create_memory(
    p_server_key text,
    p_server_name text,
    p_is_dm boolean,
    p_scope text,
    p_owner_id text,
    p_owner_name text,
    p_owner_key text,
    p_lineage bigint,
    p_lock_key text,
    p_default_limit integer,
    p_persona_id integer,
    p_created_by text,
    p_content text,
    p_embedding halfvec,
    p_memory_type text,
    p_importance double precision,
    p_decay_rate double precision,
    p_attributes jsonb,
    p_check_repeat boolean,
    OUT outcome text,
    OUT memory_id bigint,
    OUT saved_count bigint,
    OUT memory_limit integer,
    OUT personal_memories_enabled boolean
) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    s record;
BEGIN
    SELECT * INTO s FROM kioku_server_settings(p_server_key, p_is_dm);
    personal_memories_enabled := s.personal_memories_enabled;
    memory_limit := COALESCE(CASE WHEN p_scope = 'server'
        THEN s.max_server_memories ELSE s.max_personal_memories END, p_default_limit);
    IF NOT s.self_teaching_enabled THEN
        outcome := 'disabled';
        RETURN;
    END IF;

    PERFORM pg_advisory_xact_lock(hashtextextended(p_lock_key, 0));

    IF p_check_repeat THEN
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
    END IF;
    -- Read after the lock: a new snapshot sees every writer that committed before us.
    -- Personal limits count the user's global (lineage 0) memories too.
    SELECT COALESCE(sum(c.active), 0) INTO saved_count FROM memory_counts c
    WHERE c.scope = p_scope AND c.owner_id = p_owner_id
      AND c.persona_lineage_id IN (p_lineage, CASE WHEN p_scope = 'personal' THEN 0 END);
    IF saved_count >= memory_limit THEN
        outcome := 'limit_reached';
        RETURN;
    END IF;

    IF NOT s.stored THEN
        INSERT INTO servers (id, name, self_teaching_enabled)
        VALUES (p_server_key, p_server_name, s.self_teaching_enabled)
        ON CONFLICT (id) DO NOTHING;
    END IF;
    IF p_scope = 'personal' THEN
        INSERT INTO users (id, display_name, display_name_key)
        VALUES (p_owner_id, p_owner_name, p_owner_key)
        ON CONFLICT (id) DO NOTHING;
    END IF;
    INSERT INTO memories (
        scope, server_id, user_id, persona_lineage_id, persona_id, created_by, content,
        embedding, needs_embedding, memory_type, importance, decay_rate, attributes
    ) VALUES (
        p_scope,
        CASE WHEN p_scope = 'server' THEN p_owner_id END,
        CASE WHEN p_scope = 'personal' THEN p_owner_id END,
        p_lineage, p_persona_id, p_created_by, p_content,
        p_embedding, p_embedding IS NULL, p_memory_type, p_importance, p_decay_rate,
        p_attributes
    ) RETURNING id INTO memory_id;
    outcome := 'saved';
END $$;
"""
"""Migration 0010's function with ``p_check_repeat``, as a function of its own."""
ARGUMENT_TYPES = (
    "text, text, boolean, text, text, text, text, bigint, text, integer, integer, text, text, "
    "halfvec, text, double precision, double precision, jsonb, boolean"
)


def upgrade() -> None:
    """Add the 19-argument function beside the 18-argument one."""
    op.execute(CREATE_MEMORY)


def downgrade() -> None:
    """Drop it."""
    op.execute(f"DROP FUNCTION kioku_create_memory({ARGUMENT_TYPES})")
