"""Search text keeps a word's unaccented form; Cyrillic words are stemmed as Russian.

The text leg indexed ``to_tsvector('english', kioku_search_text(content))``: "собаки" did not
find a memory saying "собака" (English stemming leaves Cyrillic words as they are), nor
"Japon" one saying "Japón". The column now uses ``kioku_text``, a copy of PostgreSQL's
``russian`` configuration (ASCII words stemmed as English, exactly as before; other words as
Russian), and ``kioku_search_text`` follows each word with accents by its form without them
(``normalize`` and regular expressions: core PostgreSQL, no ``unaccent`` extension).

Revision ID: 0025
Revises: 0024
Create Date: 2026-11-29
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0025"
down_revision: str | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SEARCH_TEXT = r"""
CREATE FUNCTION kioku_search_text(content text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    -- Words of scripts written without spaces (CJK, kana, Hangul, Thai, Lao, Khmer,
    -- Myanmar) become their characters and character pairs; a word with accents (Japón,
    -- Brüder, Việt) is followed by its form without them, so it is found as typed either
    -- way; the rest is kept as it is.
    SELECT t.spaced || ' ' || coalesce((
        SELECT string_agg(normalize(regexp_replace(found.word[1], '[\u0300-\u036f]+', '', 'g'),
            NFC), ' ')
        FROM regexp_matches(normalize(t.spaced, NFD), '\S*[\u0300-\u036f]\S*', 'g')
            AS found(word)
    ), '') || ' ' || coalesce((
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
        SELECT s.text, s.runs, regexp_replace(s.text, s.runs, ' ', 'g') AS spaced
        FROM (
            SELECT normalize(content, NFKC) AS text,
                '[\u0e00-\u0eff\u1000-\u109f\u1100-\u11ff\u1780-\u17ff\u3040-\u30ff'
                || '\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+'
                AS runs
        ) AS s
    ) AS t
$$;
"""

SEARCH_TEXT_0020 = r"""
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
"""


def _search_vector(config: str, function: str) -> None:
    """Re-make the search text function, the generated column and its index."""
    op.execute("ALTER TABLE memories DROP COLUMN search_vector")
    op.execute("DROP FUNCTION kioku_search_text(text)")
    op.execute(function)
    op.execute(
        "ALTER TABLE memories ADD COLUMN search_vector tsvector "
        f"GENERATED ALWAYS AS (to_tsvector('{config}', kioku_search_text(content))) STORED"
    )
    op.execute(
        "CREATE INDEX ix_memories_search_vector ON memories USING gin (search_vector) "
        "WITH (fastupdate = off)"
    )


def upgrade() -> None:
    op.execute("CREATE TEXT SEARCH CONFIGURATION kioku_text (COPY = pg_catalog.russian)")
    _search_vector("kioku_text", SEARCH_TEXT)


def downgrade() -> None:
    _search_vector("english", SEARCH_TEXT_0020)
    op.execute("DROP TEXT SEARCH CONFIGURATION kioku_text")
