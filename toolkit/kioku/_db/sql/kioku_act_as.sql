CREATE FUNCTION kioku_act_as(p_actor text, p_persona integer) RETURNS void
LANGUAGE sql AS $$
    SELECT set_config('kioku.actor', COALESCE(p_actor, ''), true),
           set_config('kioku.persona_id', COALESCE(p_persona::text, ''), true)
$$;
