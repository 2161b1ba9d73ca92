CREATE FUNCTION kioku_unaccented_words(content text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    -- The words of the text that hold such marks, without them (one scan finds them).
    SELECT coalesce(string_agg(kioku_unaccented(found.word[1]), ' '), '')
    FROM regexp_matches(normalize(normalize(content, NFKC), NFD), '\S*[\u0300-\u036f]\S*', 'g')
        AS found(word)
$$;
