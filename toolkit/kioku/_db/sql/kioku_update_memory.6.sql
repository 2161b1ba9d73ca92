CREATE FUNCTION kioku_update_memory(p_id bigint, p_content text,
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
