CREATE FUNCTION kioku_count_cleared() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM memory_counts;
    RETURN NULL;
END $$;
