CREATE OR REPLACE FUNCTION kioku_count_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE memory_counts c SET active = c.active - r.n,
        version = nextval('kioku_scope_version_seq')
    FROM (
        SELECT scope, COALESCE(server_id, user_id) AS owner_id, persona_lineage_id,
               count(*) FILTER (WHERE status = 'active') AS n
        FROM removed GROUP BY 1, 2, 3
    ) r
    WHERE (c.scope, c.owner_id, c.persona_lineage_id) = (r.scope, r.owner_id, r.persona_lineage_id);
    RETURN NULL;
END $$;
