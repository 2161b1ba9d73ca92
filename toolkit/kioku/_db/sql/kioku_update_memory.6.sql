CREATE OR REPLACE FUNCTION kioku_update_memory(p_id bigint, p_content text,
    p_embedding halfvec, p_actor text, p_persona integer, p_event_time text)
RETURNS boolean LANGUAGE sql AS $$
    SELECT kioku_update_memory(p_id, p_content, p_embedding, p_actor, p_persona,
        p_event_time, NULL)
$$;
