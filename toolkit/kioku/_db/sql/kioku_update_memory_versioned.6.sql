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
