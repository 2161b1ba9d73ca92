"""A bounded cache of memory sets per scope, each kept with the version it was read at.

A value is reused only while the database still shows the version it was loaded with
(``memory_counts.version``, changed by triggers on every write), so a write committed by
any process is seen by the next read of every other one.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

DEFAULT_MAX_ENTRIES = 4096
"""Scopes kept per process; the least recently used are dropped first."""


class ScopeCache(Generic[K, V]):
    """Thread-safe, size-bounded map from a scope key to ``(version, value)``."""

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        self._values: OrderedDict[K, tuple[Hashable, V]] = OrderedDict()
        self._max_entries = max_entries
        self._lock = threading.Lock()

    def get(self, key: K, version: Hashable) -> V | None:
        """The value cached for ``key`` if it was loaded at ``version``, else ``None``."""
        with self._lock:
            found = self._values.get(key)
            if found is None or found[0] != version:
                return None
            self._values.move_to_end(key)
            return found[1]

    def held_version(self, key: K) -> Hashable | None:
        """The version ``key``'s value was loaded at (``None``: none is cached)."""
        with self._lock:
            found = self._values.get(key)
            return None if found is None else found[0]

    def put(self, key: K, version: Hashable, value: V) -> None:
        """Remember ``value`` of ``key`` as read at ``version``."""
        with self._lock:
            self._values[key] = (version, value)
            self._values.move_to_end(key)
            while len(self._values) > self._max_entries:
                self._values.popitem(last=False)

    def revise(self, key: K, revision: Callable[[Hashable, V], tuple[Hashable, V] | None]) -> None:
        """Replace ``key``'s entry by ``revision(version, value)``; drop it on ``None``.

        Atomic with respect to the other methods, so two revisions never interleave.
        """
        with self._lock:
            found = self._values.get(key)
            if found is None:
                return
            revised = revision(*found)
            if revised is None:
                del self._values[key]
            else:
                self._values[key] = revised

    def invalidate(self, key: K) -> None:
        """Drop ``key`` so the next read loads fresh data."""
        with self._lock:
            self._values.pop(key, None)

    def cached_keys(self) -> list[K]:
        """Keys currently cached."""
        with self._lock:
            return list(self._values)

    def __len__(self) -> int:
        with self._lock:
            return len(self._values)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._values
