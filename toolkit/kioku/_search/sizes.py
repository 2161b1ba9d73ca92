"""Approximate scope sizes, remembered briefly so most searches skip counting."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable


class ScopeSizes:
    """Thread-safe map from a search scope to its sizes, each entry kept ``ttl_seconds``.

    A scope's sizes are one count per scope kind it covers (server-wide, personal).

    The size only chooses between exact and index search (``kioku._search.planning``),
    which leaves room for stale counts: a stale one costs speed first; only one off by
    more than the index scan's headroom (five times) can make an index search come back
    with fewer candidates than asked for.
    """

    def __init__(
        self,
        ttl_seconds: float = 60.0,
        max_entries: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Create an empty map."""
        self._ttl, self._max, self._clock = ttl_seconds, max_entries, clock
        self._sizes: dict[Hashable, tuple[tuple[int, ...], float]] = {}
        self._lock = threading.Lock()

    def get(self, scope: Hashable) -> tuple[int, ...] | None:
        """The remembered sizes, or ``None`` when unknown or expired."""
        with self._lock:
            entry = self._sizes.get(scope)
        if entry is None or entry[1] < self._clock():
            return None
        return entry[0]

    def __len__(self) -> int:
        """Scopes remembered now (expired ones included until replaced or cleared)."""
        with self._lock:
            return len(self._sizes)

    def put(self, scope: Hashable, size: tuple[int, ...]) -> None:
        """Remember ``size`` for ``scope``."""
        with self._lock:
            if len(self._sizes) >= self._max:
                self._sizes.clear()
            self._sizes[scope] = (size, self._clock() + self._ttl)
