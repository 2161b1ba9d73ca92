CREATE FUNCTION kioku_unaccented_words(content text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    -- The words of the text (as kioku_search_text writes it) that kioku_unaccented changes,
    -- changed; one scan finds the words outside ASCII, the only ones it may change.
    SELECT coalesce(string_agg(w.plain, ' '), '')
    FROM regexp_matches(content, '\S*[^\u0001-\u007f]\S*', 'g') AS found(word),
        LATERAL (SELECT kioku_unaccented(found.word[1]) AS plain) AS w
    WHERE w.plain <> found.word[1]
$$;
