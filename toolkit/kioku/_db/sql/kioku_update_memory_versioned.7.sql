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
