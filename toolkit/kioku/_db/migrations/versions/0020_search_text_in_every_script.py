"""Search text in every script: words written without spaces become character pairs.

The text leg searched ``to_tsvector('english', content)``, whose parser splits words at
spaces: a Japanese, Chinese, Korean or Thai sentence was one "word", so a query sharing a
word with it found nothing. ``kioku_search_text`` (``kioku/_db/sql/kioku_search_text.sql``)
writes each run of such scripts as its characters and character pairs (the way search
engines index CJK text), and the column indexes that instead; text in other scripts is
indexed as before. Only core PostgreSQL is used (``normalize``, regular expressions), so
any server with pgvector runs it.

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-28
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SEARCH_TEXT = r"""
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
    op.execute(SEARCH_TEXT)
    _search_vector("to_tsvector('english', kioku_search_text(content))")


def downgrade() -> None:
    _search_vector("to_tsvector('english', content)")
    op.execute("DROP FUNCTION kioku_search_text(text)")
