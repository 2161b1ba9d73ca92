"""The memory spaces of ``TurnContext.for_user`` learn without a row (issue #14).

``TurnContext.for_user`` gives each user a memory space of their own, the server
``user-space:<user id>``. Like a direct message, such a space lets the model write
long-term memories until settings are stored for it; every other server without a row
still does not. The settings and their defaults stay defined in ``kioku_server_settings``
alone.

``kioku_create_memory`` registers a server without a row on its first memory; it now
stores the self-teaching it just found on (before, "on only in direct messages", which
would have turned a user's space off after its first memory).

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

USER_SPACE_PREFIX = "user-space:"
"""``kioku._context.USER_SPACE_PREFIX`` (a test keeps the two equal)."""

SERVER_SETTINGS = """
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
           CASE WHEN s.id IS NULL THEN p_is_dm OR starts_with(p_key, 'user-space:') ELSE s.self_teaching_enabled END,
           COALESCE(s.personal_memories_enabled, true),
           COALESCE(s.private_channel_ids, '{}'),
           COALESCE(s.stm_privacy_bypass, false),
           NULLIF(s.max_server_memories, 0),
           NULLIF(s.max_personal_memories, 0)
    FROM (SELECT p_key AS key) AS wanted LEFT JOIN servers AS s ON s.id = wanted.key
$$;
"""  # noqa: E501
"""Settings without a row: self-teaching on in direct messages and in users' spaces."""

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
"""A server registered by its first memory keeps the self-teaching it was found with."""

PREVIOUS_SERVER_SETTINGS = """
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
           CASE WHEN s.id IS NULL THEN p_is_dm ELSE s.self_teaching_enabled END,
           COALESCE(s.personal_memories_enabled, true),
           COALESCE(s.private_channel_ids, '{}'),
           COALESCE(s.stm_privacy_bypass, false),
           NULLIF(s.max_server_memories, 0),
           NULLIF(s.max_personal_memories, 0)
    FROM (SELECT p_key AS key) AS wanted LEFT JOIN servers AS s ON s.id = wanted.key
$$;
"""
"""Migration 0006's settings function, restored by the downgrade."""

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
"""Migration 0007's create function, restored by the downgrade."""


def upgrade() -> None:
    """Self-teaching on without a row in direct messages and in users' spaces."""
    op.execute(SERVER_SETTINGS)
    op.execute(CREATE_MEMORY)


def downgrade() -> None:
    """Back to migration 0009's functions."""
    op.execute(PREVIOUS_SERVER_SETTINGS)
    op.execute(PREVIOUS_CREATE_MEMORY)
