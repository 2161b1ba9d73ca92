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

from collections.abc import Sequence

from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
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
        VALUES (p_server_key, p_server_name, p_is_dm)
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
"""Migration 0006's function, looking for the same content after the scope's lock."""

PREVIOUS_CREATE_MEMORY = """
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
        VALUES (p_server_key, p_server_name, p_is_dm)
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
"""Migration 0006's function, restored by the downgrade."""


def upgrade() -> None:
    op.execute(CREATE_MEMORY)


def downgrade() -> None:
    op.execute(PREVIOUS_CREATE_MEMORY)
