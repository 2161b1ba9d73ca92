CREATE FUNCTION kioku_delete_memory(p_id bigint, p_actor text, p_persona integer)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    v_found boolean;
BEGIN
    PERFORM kioku_act_as(p_actor, p_persona);
    DELETE FROM memories WHERE id = p_id;
    v_found := FOUND;
    PERFORM kioku_act_as(NULL, NULL);
    RETURN v_found;
END $$;
