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
