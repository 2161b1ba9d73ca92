"""The text-search configuration memories are indexed and searched with (one name)."""

from __future__ import annotations

TEXT_CONFIG = "kioku_text"
"""PostgreSQL's ``russian`` configuration under kioku's own name (migration 0025): words in
ASCII letters are stemmed as English, as the ``english`` configuration does; words in other
letters as Russian (Snowball leaves words of other alphabets as they are), so "собаки" finds
a memory saying "собака". Each statement and the ``search_vector`` column name it, so a
later migration can change what it does without touching them."""
