CREATE FUNCTION kioku_same_event(
    p_type text, p_when timestamptz, q_type text, q_when timestamptz
) RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT (p_type IS DISTINCT FROM 'episodic' AND q_type IS DISTINCT FROM 'episodic')
        OR (p_when AT TIME ZONE 'UTC')::date = (q_when AT TIME ZONE 'UTC')::date
$$;
