CREATE FUNCTION kioku_unaccented(content text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    -- The text without the combining marks of its letters (accents, Vietnamese tones):
    -- "Japón" is "Japon", "phở" is "pho".
    SELECT normalize(regexp_replace(normalize(content, NFD), '[\u0300-\u036f]+', '', 'g'), NFC)
$$;
