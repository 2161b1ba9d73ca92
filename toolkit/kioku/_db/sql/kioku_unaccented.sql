CREATE FUNCTION kioku_unaccented(content text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    -- The text without the marks of its Latin and Greek letters (accents, Vietnamese tones)
    -- and with the letters English writes as two or as a plain one: "Japón" is "Japon",
    -- "phở" "pho", "sœur" "soeur", "Fußball" "Fussball". Cyrillic keeps its marks: "й" and
    -- "ё" are letters of their own ("война" is not "воина").
    SELECT translate(
        replace(replace(replace(replace(replace(replace(
            normalize(regexp_replace(normalize(content, NFD),
                '([A-Za-z\u00c0-\u024f\u0370-\u03ff\u1e00-\u1fff])[\u0300-\u036f]+', '\1', 'g'),
                NFC),
            'œ', 'oe'), 'Œ', 'OE'), 'æ', 'ae'), 'Æ', 'AE'), 'ß', 'ss'), 'ẞ', 'SS'),
        'øØłŁđĐħĦı', 'oOlLdDhHi')
$$;
