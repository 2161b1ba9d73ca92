"""Each vector records the model that made it; a write never stores another model's.

``kioku reembed`` could switch embedders while a worker was writing: a vector the worker
computed with the old model, written after the switch queued every memory, stayed marked
as current (issue #39). ``memories.embedded_with`` now names the model of each vector
(backfilled from ``kioku_meta``), and ``kioku_vector_columns`` decides what a write stores:
the vector when its model is the one ``kioku_meta`` records (read under a share lock, so
the check serialises with a switch), otherwise none, the memory queued
(``needs_embedding``). The create and the update gain a ``p_embedder`` argument and
answer whether the vector was stored (``embedded``), so a worker learns of a switch from
its own write. The forms without it stay for processes of the previous release: their
vectors are kept unlabelled (the six-argument update now calls the new one with ``NULL``,
which clears the label), and the next ``kioku reembed`` embeds them again.

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-28
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0023"
down_revision: str | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

VECTOR_COLUMNS = """
CREATE FUNCTION kioku_vector_columns(p_embedding halfvec, p_embedder text,
    OUT embedding halfvec, OUT needs_embedding boolean, OUT embedded_with text)
LANGUAGE plpgsql AS $$
BEGIN
    IF p_embedder IS NULL THEN
        -- A process of an earlier release does not say which model made its vector: kept
        -- unlabelled, so the next `kioku reembed` embeds it again.
        embedding := p_embedding;
    ELSIF p_embedding IS NOT NULL THEN
        -- Read under a share lock: a re-embed's switch rewrites this row in the transaction
        -- that queues every memory, so a write either commits before that queueing sees it
        -- or waits here and finds the new model.
        PERFORM FROM kioku_meta m
        WHERE m.key = 'embedding_model' AND m.value = p_embedder
          AND vector_dims(p_embedding) = (SELECT d.value::integer FROM kioku_meta d
                                          WHERE d.key = 'embedding_dimension')
        FOR SHARE OF m;
        IF FOUND THEN
            embedding := p_embedding;
            embedded_with := p_embedder;
        END IF;
    END IF;
    needs_embedding := embedding IS NULL;
END $$;
"""

CREATE_MEMORY = """
CREATE FUNCTION kioku_create_memory_within_limit(
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
    p_embedder text,
    OUT outcome text,
    OUT memory_id bigint,
    OUT saved_count bigint,
    OUT embedded boolean
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
        embedding, needs_embedding, embedded_with, memory_type, importance, decay_rate,
        attributes
    ) SELECT
        p_scope,
        CASE WHEN p_scope = 'server' THEN p_owner_id END,
        CASE WHEN p_scope = 'personal' THEN p_owner_id END,
        p_lineage, p_persona_id, p_created_by, p_content,
        v.embedding, v.needs_embedding, v.embedded_with, p_memory_type, p_importance,
        p_decay_rate, p_attributes
    FROM kioku_vector_columns(p_embedding, p_embedder) AS v
    RETURNING id, embedding IS NOT NULL INTO memory_id, embedded;
    outcome := 'saved';
END $$;
"""

UPDATE_MEMORY = """
CREATE FUNCTION kioku_update_memory(p_id bigint, p_content text,
    p_embedding halfvec, p_actor text, p_persona integer, p_event_time text,
    p_embedder text)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    v_found boolean;
BEGIN
    PERFORM kioku_act_as(p_actor, p_persona);
    UPDATE memories SET content = p_content, embedding = v.embedding,
        needs_embedding = v.needs_embedding, embedded_with = v.embedded_with,
        updated_at = now(),
        attributes = CASE WHEN p_event_time IS NULL THEN attributes
            ELSE jsonb_set(COALESCE(attributes, '{}'::jsonb), '{event_time}',
                to_jsonb(p_event_time))
            END
    FROM kioku_vector_columns(p_embedding, p_embedder) AS v
    WHERE id = p_id;
    v_found := FOUND;
    PERFORM kioku_act_as(NULL, NULL);
    RETURN v_found;
END $$;
"""

UPDATE_MEMORY_FORWARDER = """
CREATE OR REPLACE FUNCTION kioku_update_memory(p_id bigint, p_content text,
    p_embedding halfvec, p_actor text, p_persona integer, p_event_time text)
RETURNS boolean LANGUAGE sql AS $$
    SELECT kioku_update_memory(p_id, p_content, p_embedding, p_actor, p_persona,
        p_event_time, NULL)
$$;
"""

UPDATE_VERSIONED = """
CREATE FUNCTION kioku_update_memory_versioned(p_id bigint, p_content text,
    p_embedding halfvec, p_actor text, p_persona integer, p_event_time text,
    p_embedder text)
RETURNS TABLE(applied boolean, scope_kind text, scope_owner text, scope_lineage bigint,
    version_before bigint, version_after bigint, changed_at timestamptz,
    embedded boolean)
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
            NULL::bigint, NULL::timestamptz, NULL::boolean;
        RETURN;
    END IF;
    SELECT c.version INTO version_before FROM memory_counts c
    WHERE (c.scope, c.owner_id, c.persona_lineage_id) = (v_scope, v_owner, v_lineage)
    FOR UPDATE;
    applied := kioku_update_memory(p_id, p_content, p_embedding, p_actor, p_persona,
        p_event_time, p_embedder);
    SELECT c.version INTO version_after FROM memory_counts c
    WHERE (c.scope, c.owner_id, c.persona_lineage_id) = (v_scope, v_owner, v_lineage);
    SELECT m.updated_at, m.embedding IS NOT NULL INTO changed_at, embedded
    FROM memories m WHERE m.id = p_id;
    scope_kind := v_scope;
    scope_owner := v_owner;
    scope_lineage := v_lineage;
    RETURN NEXT;
END $$;
"""

BACKFILL = (
    "UPDATE memories AS m SET embedded_with = k.value FROM kioku_meta AS k "
    "WHERE k.key = 'embedding_model' AND m.embedding IS NOT NULL"
)

CREATE_ARGUMENTS = (
    "text, text, text, text, text, text, bigint, text, integer, integer, text, text, "
    "halfvec, text, double precision, double precision, jsonb, boolean"
)


def upgrade() -> None:
    """Add and backfill the column; install the functions that check a vector's model."""
    op.execute("ALTER TABLE memories ADD COLUMN embedded_with text")
    op.execute(BACKFILL)
    for function in (
        VECTOR_COLUMNS,
        CREATE_MEMORY,
        UPDATE_MEMORY,
        UPDATE_MEMORY_FORWARDER,
        UPDATE_VERSIONED,
    ):
        op.execute(function)


OLD_UPDATE_MEMORY = """
CREATE OR REPLACE FUNCTION kioku_update_memory(p_id bigint, p_content text,
    p_embedding halfvec, p_actor text, p_persona integer, p_event_time text)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    v_found boolean;
BEGIN
    PERFORM kioku_act_as(p_actor, p_persona);
    UPDATE memories SET content = p_content, embedding = p_embedding,
        needs_embedding = p_embedding IS NULL, updated_at = now(),
        attributes = CASE WHEN p_event_time IS NULL THEN attributes
            ELSE jsonb_set(COALESCE(attributes, '{}'::jsonb), '{event_time}',
                to_jsonb(p_event_time))
            END
    WHERE id = p_id;
    v_found := FOUND;
    PERFORM kioku_act_as(NULL, NULL);
    RETURN v_found;
END $$;
"""


def downgrade() -> None:
    """Restore migration 0017's update; drop the new functions and the column."""
    op.execute(OLD_UPDATE_MEMORY)
    op.execute(f"DROP FUNCTION kioku_create_memory_within_limit({CREATE_ARGUMENTS}, text)")
    update = "bigint, text, halfvec, text, integer, text, text"
    op.execute(f"DROP FUNCTION kioku_update_memory_versioned({update})")
    op.execute(f"DROP FUNCTION kioku_update_memory({update})")
    op.execute("DROP FUNCTION kioku_vector_columns(halfvec, text)")
    op.execute("ALTER TABLE memories DROP COLUMN embedded_with")
