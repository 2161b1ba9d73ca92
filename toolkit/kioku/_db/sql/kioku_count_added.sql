CREATE OR REPLACE FUNCTION kioku_count_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO memory_counts AS c (scope, owner_id, persona_lineage_id, active, version)
    SELECT scope, COALESCE(server_id, user_id), persona_lineage_id,
           count(*) FILTER (WHERE status = 'active'), nextval('kioku_scope_version_seq')
    FROM added GROUP BY 1, 2, 3
    ON CONFLICT (scope, owner_id, persona_lineage_id)
    DO UPDATE SET active = c.active + EXCLUDED.active, version = EXCLUDED.version;
    RETURN NULL;
END $$;
