"""English stems of words, as PostgreSQL's ``english`` text-search configuration makes them.

Snowball's stemmer objects keep the word being stemmed in their own state, so one shared
object must not stem in two threads at once: misses of the cache take a lock.
"""

from __future__ import annotations

import threading
from functools import lru_cache

import snowballstemmer

_STEMMER = snowballstemmer.stemmer("english")
_LOCK = threading.Lock()


@lru_cache(maxsize=65_536)
def stem(word: str) -> str:
    """The Snowball English stem of ``word`` (already lower-cased)."""
    with _LOCK:
        return str(_STEMMER.stemWord(word))
