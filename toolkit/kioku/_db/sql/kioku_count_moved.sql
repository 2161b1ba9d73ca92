CREATE OR REPLACE FUNCTION kioku_count_moved() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE memory_counts
    SET active = active - CASE WHEN OLD.status = 'active' THEN 1 ELSE 0 END,
        version = nextval('kioku_scope_version_seq')
    WHERE scope = OLD.scope AND owner_id = COALESCE(OLD.server_id, OLD.user_id)
      AND persona_lineage_id = OLD.persona_lineage_id;
    INSERT INTO memory_counts AS c (scope, owner_id, persona_lineage_id, active, version)
    VALUES (NEW.scope, COALESCE(NEW.server_id, NEW.user_id), NEW.persona_lineage_id,
            CASE WHEN NEW.status = 'active' THEN 1 ELSE 0 END,
            nextval('kioku_scope_version_seq'))
    ON CONFLICT (scope, owner_id, persona_lineage_id)
    DO UPDATE SET active = c.active + EXCLUDED.active, version = EXCLUDED.version;
    RETURN NULL;
END $$;
