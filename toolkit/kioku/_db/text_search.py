"""How memories are indexed and searched as text: the configuration, column and query."""

from __future__ import annotations

TEXT_CONFIG = "kioku_text"
"""PostgreSQL's ``russian`` configuration under kioku's own name (migration 0025): words in
ASCII letters are stemmed as English, as the ``english`` configuration does; words in other
letters as Russian (Snowball leaves words of other alphabets as they are), so "собаки" finds
a memory saying "собака"."""

SEARCH_VECTOR = (
    f"setweight(to_tsvector('{TEXT_CONFIG}', kioku_search_text(content)), 'A') || "
    f"to_tsvector('{TEXT_CONFIG}', kioku_unaccented_words(kioku_search_text(content)))"
)
"""The ``search_vector`` column: the words as written, weight A, and the words holding
accents without them (``kioku/_db/sql/kioku_unaccented_words.sql``, on the text as
``kioku_search_text`` writes it, so "Japón猫" gives "japon"), the default weight D.
A query typed without accents finds "Japón"; the relevance floor can tell such a match
from the word as written (:data:`EXACT_WEIGHT`)."""

EXACT_WEIGHT = "{a}"
"""``ts_filter`` weights of the words as written in :data:`SEARCH_VECTOR`."""

TEXT_QUERY = (
    f"to_tsquery('{TEXT_CONFIG}', CASE WHEN kioku_unaccented(:terms) = :terms THEN :terms "
    "ELSE :terms || ' | ' || kioku_unaccented(:terms) END)"
)
"""A statement's full-text query: any of ``:terms`` (``w1 | w2 …``), or of their unaccented
forms, so "café" finds "cafés" (indexed also as "cafes") as the English stemmer once made it.
Terms without accents are not repeated: PostgreSQL costs each term of a query as an index
probe, and twice the terms turned the scan of a 100-memory scope from its index to the
table (0.03 against 0.15 ms)."""
