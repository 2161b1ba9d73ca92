"""A small cache of memory sets per scope, invalidated after every committed write."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class ScopeCache(Generic[K, V]):
    """Thread-safe map from a scope key to its loaded value."""

    def __init__(self) -> None:
        self._values: dict[K, V] = {}
        self._lock = threading.Lock()
        self._generation: dict[K, int] = {}

    def get_or_load(self, key: K, load: Callable[[], V]) -> V:
        """Return the cached value, loading it when absent.

        A load that raced with an invalidation is returned but not cached.
        """
        with self._lock:
            if key in self._values:
                return self._values[key]
            generation = self._generation.get(key, 0)
        value = load()
        with self._lock:
            if self._generation.get(key, 0) == generation:
                self._values[key] = value
        return value

    def invalidate(self, key: K) -> None:
        """Drop ``key`` so the next read loads fresh data."""
        with self._lock:
            self._values.pop(key, None)
            self._generation[key] = self._generation.get(key, 0) + 1

    def cached_keys(self) -> list[K]:
        """Keys currently cached."""
        with self._lock:
            return list(self._values)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._values
