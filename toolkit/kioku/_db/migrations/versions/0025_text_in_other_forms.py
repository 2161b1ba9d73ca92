"""Words are stemmed as Russian when not in ASCII letters; words with accents are found
typed without them.

The text leg indexed ``to_tsvector('english', kioku_search_text(content))``: "собаки" did not
find a memory saying "собака" (English stemming leaves Cyrillic words as they are), nor
"Japon" one saying "Japón". The column now uses ``kioku_text``, a copy of PostgreSQL's
``russian`` configuration (ASCII words stemmed as English, exactly as before; other words as
Russian), holds the words as written with weight A, and adds the words holding accents
without them (``kioku_unaccented_words``) with the default weight D, so the relevance floor
can tell the two apart. Core PostgreSQL only (``normalize``, regular expressions): no
``unaccent`` extension.

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
    -- The text without the combining marks of its letters (accents, Vietnamese tones):
    -- "Japón" is "Japon", "phở" is "pho".
    SELECT normalize(regexp_replace(normalize(content, NFD), '[\u0300-\u036f]+', '', 'g'), NFC)
$$;
"""

UNACCENTED_WORDS = r"""
CREATE FUNCTION kioku_unaccented_words(content text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    -- The words of the text that hold such marks, without them (one scan finds them).
    SELECT coalesce(string_agg(kioku_unaccented(found.word[1]), ' '), '')
    FROM regexp_matches(normalize(normalize(content, NFKC), NFD), '\S*[\u0300-\u036f]\S*', 'g')
        AS found(word)
$$;
"""

SEARCH_VECTOR = (
    "setweight(to_tsvector('kioku_text', kioku_search_text(content)), 'A') || "
    "to_tsvector('kioku_text', kioku_unaccented_words(content))"
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
