"""Stems of words, as kioku's text-search configuration makes them.

``kioku_text`` (:data:`kioku._db.text_search.TEXT_CONFIG`) stems a word of ASCII letters as
English and any other word as Russian (Snowball's Russian stemmer leaves words of other
alphabets as they are). Snowball's stemmer objects keep the word being stemmed in their own
state, so one shared object must not stem in two threads at once: misses of the cache take
a lock.
"""

from __future__ import annotations

import threading
from functools import lru_cache

import snowballstemmer

_ENGLISH = snowballstemmer.stemmer("english")
_RUSSIAN = snowballstemmer.stemmer("russian")
_LOCK = threading.Lock()


@lru_cache(maxsize=65_536)
def stem(word: str) -> str:
    """The stem of ``word`` (already lower-cased): Snowball English or Russian, by letters."""
    stemmer = _ENGLISH if word.isascii() else _RUSSIAN
    with _LOCK:
        return str(stemmer.stemWord(word))
