"""Words are stemmed as Russian when not in ASCII letters; words with accents are found
typed without them.

The text leg indexed ``to_tsvector('english', kioku_search_text(content))``: "собаки" did not
find a memory saying "собака" (English stemming leaves Cyrillic words as they are), nor
"Japon" one saying "Japón". The column now uses ``kioku_text``, a copy of PostgreSQL's
``russian`` configuration (ASCII words stemmed as English, exactly as before; other words as
Russian), holds the words as written with weight A, and adds the words holding accents
(or letters such as "œ", "ß", "ø") without them (``kioku_unaccented_words``) with the
default weight D, so the relevance floor can tell the two apart. Core PostgreSQL only
(``normalize``, regular expressions): no ``unaccent`` extension.

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

UNACCENTED = r"""
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
"""

UNACCENTED_WORDS = r"""
CREATE FUNCTION kioku_unaccented_words(content text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    -- The words of the text (as kioku_search_text writes it) that kioku_unaccented changes,
    -- changed; one scan finds the words outside ASCII, the only ones it may change.
    SELECT coalesce(string_agg(w.plain, ' '), '')
    FROM regexp_matches(content, '\S*[^\u0001-\u007f]\S*', 'g') AS found(word),
        LATERAL (SELECT kioku_unaccented(found.word[1]) AS plain) AS w
    WHERE w.plain <> found.word[1]
$$;
"""

SEARCH_VECTOR = (
    "setweight(to_tsvector('kioku_text', kioku_search_text(content)), 'A') || "
    "to_tsvector('kioku_text', kioku_unaccented_words(kioku_search_text(content)))"
)


def _search_vector(expression: str) -> None:
    """Re-make the generated column (and its index) with ``expression``."""
    op.execute("ALTER TABLE memories DROP COLUMN search_vector")
    op.execute(
        "ALTER TABLE memories ADD COLUMN search_vector tsvector "
        f"GENERATED ALWAYS AS ({expression}) STORED"
    )
    op.execute(
        "CREATE INDEX ix_memories_search_vector ON memories USING gin (search_vector) "
        "WITH (fastupdate = off)"
    )


def upgrade() -> None:
    op.execute("CREATE TEXT SEARCH CONFIGURATION kioku_text (COPY = pg_catalog.russian)")
    op.execute(UNACCENTED)
    op.execute(UNACCENTED_WORDS)
    _search_vector(SEARCH_VECTOR)


def downgrade() -> None:
    _search_vector("to_tsvector('english', kioku_search_text(content))")
    op.execute("DROP FUNCTION kioku_unaccented_words(text)")
    op.execute("DROP FUNCTION kioku_unaccented(text)")
    op.execute("DROP TEXT SEARCH CONFIGURATION kioku_text")
