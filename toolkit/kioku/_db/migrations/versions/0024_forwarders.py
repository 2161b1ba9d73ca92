"""The earlier release's create and versioned update become forwarders: one body each.

Migration 0023 kept ``kioku_create_memory_within_limit`` of 18 arguments and
``kioku_update_memory_versioned`` of 6 for processes of the previous release during a
rolling upgrade, each a copy of the new function's body. They now call the new forms with
no model (``p_embedder`` ``NULL``), which keeps their vectors unlabelled, as before, so the
next ``kioku reembed`` embeds them again.

Revision ID: 0024
Revises: 0023
Create Date: 2026-11-28
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0024"
down_revision: str | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

CREATE_FORWARDER = """
CREATE OR REPLACE FUNCTION kioku_create_memory_within_limit(
    p_server_key text,
    p_server_name text,
    p_scope text,
    p_owner_id text,
    p_owner_name text,
    p_owner_key text,
    p_lineage bigint,
    p_lock_key text,
    p_limit integer,
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
    OUT saved_count bigint
) LANGUAGE sql AS $$
    SELECT c.outcome, c.memory_id, c.saved_count FROM kioku_create_memory_within_limit(
        p_server_key, p_server_name, p_scope, p_owner_id, p_owner_name, p_owner_key,
        p_lineage, p_lock_key, p_limit, p_persona_id, p_created_by, p_content, p_embedding,
        p_memory_type, p_importance, p_decay_rate, p_attributes, p_check_repeat, NULL) AS c
$$;
"""

UPDATE_VERSIONED_FORWARDER = """
CREATE OR REPLACE FUNCTION kioku_update_memory_versioned(p_id bigint, p_content text,
    p_embedding halfvec, p_actor text, p_persona integer, p_event_time text)
RETURNS TABLE(applied boolean, scope_kind text, scope_owner text, scope_lineage bigint,
    version_before bigint, version_after bigint, changed_at timestamptz)
LANGUAGE sql AS $$
    SELECT v.applied, v.scope_kind, v.scope_owner, v.scope_lineage, v.version_before,
        v.version_after, v.changed_at
    FROM kioku_update_memory_versioned(p_id, p_content, p_embedding, p_actor, p_persona,
        p_event_time, NULL) AS v
$$;
"""

OLD_CREATE = """
CREATE OR REPLACE FUNCTION kioku_create_memory_within_limit(
    p_server_key text,
    p_server_name text,
    p_scope text,
    p_owner_id text,
    p_owner_name text,
    p_owner_key text,
    p_lineage bigint,
    p_lock_key text,
    p_limit integer,
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
    OUT saved_count bigint
) LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(p_lock_key, 0));
    IF p_check_repeat THEN
        SELECT m.id INTO memory_id FROM memories m
        WHERE m.status = 'active' AND m.scope = p_scope
          AND m.persona_lineage_id IN (p_lineage, CASE WHEN p_scope = 'personal' THEN 0 END)
          AND ((p_scope = 'server' AND m.server_id = p_owner_id)
               OR (p_scope = 'personal' AND m.user_id = p_owner_id))
          AND m.content = p_content
          AND kioku_same_event(m.memory_type, m.happened_at, p_memory_type,
                               coalesce(kioku_event_time(p_attributes), now()))
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
    IF saved_count >= p_limit THEN
        outcome := 'limit_reached';
        RETURN;
    END IF;

    -- A server without a row, registered by its first memory, keeps the self-teaching
    -- that let the caller write.
    IF NOT EXISTS (SELECT 1 FROM servers s WHERE s.id = p_server_key) THEN
        INSERT INTO servers (id, name, self_teaching_enabled)
        VALUES (p_server_key, p_server_name, true)
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

OLD_UPDATE_VERSIONED = """
CREATE OR REPLACE FUNCTION kioku_update_memory_versioned(p_id bigint, p_content text,
    p_embedding halfvec, p_actor text, p_persona integer, p_event_time text)
RETURNS TABLE(applied boolean, scope_kind text, scope_owner text, scope_lineage bigint,
    version_before bigint, version_after bigint, changed_at timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
    v_scope text;
    v_owner text;
    v_lineage bigint;
BEGIN
    SELECT m.scope, COALESCE(m.server_id, m.user_id), m.persona_lineage_id
    INTO v_scope, v_owner, v_lineage FROM memories m WHERE m.id = p_id;
    IF NOT FOUND THEN
        RETURN QUERY SELECT false, NULL::text, NULL::text, NULL::bigint, NULL::bigint,
            NULL::bigint, NULL::timestamptz;
        RETURN;
    END IF;
    SELECT c.version INTO version_before FROM memory_counts c
    WHERE (c.scope, c.owner_id, c.persona_lineage_id) = (v_scope, v_owner, v_lineage)
    FOR UPDATE;
    applied := kioku_update_memory(p_id, p_content, p_embedding, p_actor, p_persona,
        p_event_time);
    SELECT c.version INTO version_after FROM memory_counts c
    WHERE (c.scope, c.owner_id, c.persona_lineage_id) = (v_scope, v_owner, v_lineage);
    SELECT m.updated_at INTO changed_at FROM memories m WHERE m.id = p_id;
    scope_kind := v_scope;
    scope_owner := v_owner;
    scope_lineage := v_lineage;
    RETURN NEXT;
END $$;
"""


def upgrade() -> None:
    """Replace both bodies with calls of the new forms."""
    op.execute(CREATE_FORWARDER)
    op.execute(UPDATE_VERSIONED_FORWARDER)


def downgrade() -> None:
    """Restore the bodies migration 0023 left."""
    op.execute(OLD_CREATE)
    op.execute(OLD_UPDATE_VERSIONED)
