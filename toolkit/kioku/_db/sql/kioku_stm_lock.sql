CREATE OR REPLACE FUNCTION kioku_stm_lock(p_threads text[], p_expected timestamptz[] DEFAULT NULL)
RETURNS TABLE(thread_id text, last_updated timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
    t text;
BEGIN
    FOR t IN SELECT DISTINCT u FROM unnest(p_threads) AS u ORDER BY u LOOP
        PERFORM pg_advisory_xact_lock(7039343, hashtext(t));
    END LOOP;
    IF p_expected IS NOT NULL AND EXISTS (
        SELECT 1 FROM unnest(p_threads, p_expected) AS e(id, version)
        LEFT JOIN stm_threads s ON s.thread_id = e.id
        WHERE s.last_updated IS DISTINCT FROM e.version
    ) THEN
        RAISE EXCEPTION 'short-term memory changed since it was read' USING ERRCODE = 'KIO01';
    END IF;
    RETURN QUERY
        SELECT e.id, s.last_updated FROM unnest(p_threads) AS e(id)
        LEFT JOIN stm_threads s ON s.thread_id = e.id;
END;
$$;
