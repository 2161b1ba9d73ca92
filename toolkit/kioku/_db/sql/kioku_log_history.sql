CREATE FUNCTION kioku_log_history() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    v_actor text;
    v_persona integer;
BEGIN
    IF TG_OP <> 'INSERT' THEN
        v_actor := NULLIF(current_setting('kioku.actor', true), '');
        v_persona := NULLIF(current_setting('kioku.persona_id', true), '')::integer;
    END IF;
    IF TG_OP = 'INSERT' THEN
        INSERT INTO memory_history (memory_id, action, old_content, new_content,
            actor_user_id, persona_id, scope, owner_id, persona_lineage_id)
        VALUES (NEW.id, 'create', NULL, NEW.content, NEW.created_by, NEW.persona_id,
            NEW.scope, COALESCE(NEW.server_id, NEW.user_id), NEW.persona_lineage_id);
    ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO memory_history (memory_id, action, old_content, new_content,
            actor_user_id, persona_id, scope, owner_id, persona_lineage_id)
        VALUES (NEW.id, 'update', OLD.content, NEW.content, v_actor, v_persona,
            NEW.scope, COALESCE(NEW.server_id, NEW.user_id), NEW.persona_lineage_id);
    ELSE
        INSERT INTO memory_history (memory_id, action, old_content, new_content,
            actor_user_id, persona_id, scope, owner_id, persona_lineage_id)
        VALUES (OLD.id, 'delete', OLD.content, NULL, v_actor, v_persona,
            OLD.scope, COALESCE(OLD.server_id, OLD.user_id), OLD.persona_lineage_id);
    END IF;
    RETURN NULL;
END $$;
