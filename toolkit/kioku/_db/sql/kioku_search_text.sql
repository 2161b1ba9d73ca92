CREATE FUNCTION kioku_search_text(content text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    -- Words of scripts written without spaces (CJK, kana, Hangul, Thai, Lao, Khmer,
    -- Myanmar) become their characters and character pairs; the rest is kept as it is.
    SELECT regexp_replace(t.text, t.runs, ' ', 'g') || ' ' || coalesce((
        SELECT string_agg(gram, ' ')
        FROM regexp_matches(t.text, t.runs, 'g') AS found(run),
            LATERAL (
                SELECT substr(found.run[1], i, 1) AS gram
                FROM generate_series(1, length(found.run[1])) AS i
                UNION ALL
                SELECT substr(found.run[1], i, 2)
                FROM generate_series(1, length(found.run[1]) - 1) AS i
            ) AS grams
    ), '')
    FROM (
        SELECT normalize(content, NFKC) AS text,
            '[\u0e00-\u0eff\u1000-\u109f\u1100-\u11ff\u1780-\u17ff\u3040-\u30ff'
            || '\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+' AS runs
    ) AS t
$$;
