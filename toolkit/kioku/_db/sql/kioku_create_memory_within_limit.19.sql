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
