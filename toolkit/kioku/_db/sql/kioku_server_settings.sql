CREATE OR REPLACE FUNCTION kioku_server_settings(p_key text, p_is_dm boolean,
    OUT stored boolean,
    OUT self_teaching_enabled boolean,
    OUT personal_memories_enabled boolean,
    OUT private_channel_ids text[],
    OUT stm_privacy_bypass boolean,
    OUT max_server_memories integer,
    OUT max_personal_memories integer
) LANGUAGE sql STABLE AS $$
    SELECT s.id IS NOT NULL,
           CASE WHEN s.id IS NULL THEN p_is_dm OR starts_with(p_key, 'user-space:') ELSE s.self_teaching_enabled END,
           COALESCE(s.personal_memories_enabled, true),
           COALESCE(s.private_channel_ids, '{}'),
           COALESCE(s.stm_privacy_bypass, false),
           NULLIF(s.max_server_memories, 0),
           NULLIF(s.max_personal_memories, 0)
    FROM (SELECT p_key AS key) AS wanted LEFT JOIN servers AS s ON s.id = wanted.key
$$;
