CREATE FUNCTION kioku_unaccented_words(content text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    -- The words of the text (as kioku_search_text writes it) that kioku_unaccented changes,
    -- changed; one scan finds the words holding a mark or such a letter.
    SELECT coalesce(string_agg(w.plain, ' '), '')
    FROM regexp_matches(normalize(content, NFD),
            '\S*[\u0300-\u036fœŒæÆßẞøØłŁđĐħĦı]\S*', 'g') AS found(word),
        LATERAL (SELECT normalize(found.word[1], NFC) AS written) AS n,
        LATERAL (SELECT kioku_unaccented(n.written) AS plain) AS w
    WHERE w.plain <> n.written
$$;
