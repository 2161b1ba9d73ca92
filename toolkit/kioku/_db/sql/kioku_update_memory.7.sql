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
