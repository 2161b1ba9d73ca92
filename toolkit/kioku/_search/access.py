"""Access tracking without a write per search: counts are batched and flushed together."""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

logger = logging.getLogger(__name__)

_FLUSH = text(
    "INSERT INTO memory_access AS a (memory_id, access_count, last_accessed) "
    "SELECT v.id, v.n, now() "
    "FROM unnest(CAST(:ids AS bigint[]), CAST(:ns AS int[])) AS v(id, n) "
    "JOIN memories m ON m.id = v.id "
    "ORDER BY v.id "
    "ON CONFLICT (memory_id) DO UPDATE "
    "SET access_count = a.access_count + excluded.access_count, last_accessed = now()"
)
"""Counts go to ``memory_access``, never to ``memories`` rows (no row locks held against
the update tool, no index entries added); deleted memories are skipped."""


_NOT_COUNTED: ContextVar[bool] = ContextVar("kioku_accesses_not_counted", default=False)


@contextmanager
def not_counted() -> Iterator[None]:
    """Accesses recorded in this block (this thread or task only) are not counted.

    For a caller that must write nothing, such as a read-only MCP server, whose store
    other callers of the process may share.
    """
    token = _NOT_COUNTED.set(True)
    try:
        yield
    finally:
        _NOT_COUNTED.reset(token)


class AccessRecorder:
    """Collects "this memory was returned or rendered" events; one UPDATE per batch.

    A batch is written by a timer thread: ``interval`` seconds after its first access, or
    at once when ``flush_every`` distinct memories are pending; never by the search or
    context build that recorded the access.
    """

    def __init__(
        self,
        sessions: sessionmaker[Session],
        *,
        flush_every: int = 5000,
        interval: float = 5.0,
    ) -> None:
        """Start with nothing pending."""
        self._sessions = sessions
        self.flush_every = flush_every
        self.interval = interval
        self._pending: Counter[int] = Counter()
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._timer_is_immediate = False

    def record(self, memory_ids: Iterable[int]) -> None:
        """Count one access for each id, written later in a batch (not in :func:`not_counted`)."""
        if _NOT_COUNTED.get():
            return
        with self._lock:
            self._pending.update(memory_ids)
            if len(self._pending) >= self.flush_every and not self._timer_is_immediate:
                if self._timer is not None:
                    self._timer.cancel()
                self._start_timer(0.0)
            elif self._pending and self._timer is None:
                self._start_timer(self.interval)

    def _start_timer(self, delay: float) -> None:
        """Write the batch after ``delay`` seconds, in a thread of its own (lock held)."""
        self._timer = threading.Timer(delay, self._on_timer)
        self._timer.daemon = True
        self._timer_is_immediate = delay == 0.0
        self._timer.start()

    def _on_timer(self) -> None:
        with self._lock:
            self._timer, self._timer_is_immediate = None, False
        self.flush()

    def close(self) -> None:
        """Stop the timer and write what is pending."""
        with self._lock:
            timer, self._timer, self._timer_is_immediate = self._timer, None, False
        if timer is not None:
            timer.cancel()
        self.flush()

    def flush(self) -> None:
        """Write pending counts (failures are logged and the counts kept for next time)."""
        with self._lock:
            batch, self._pending = self._pending, Counter()
        if not batch:
            return
        try:
            with self._sessions() as session, session.begin():
                session.execute(_FLUSH, {"ids": list(batch), "ns": list(batch.values())})
        except Exception as exc:
            logger.warning("kioku: could not record memory accesses (%s); will retry", exc)
            with self._lock:
                self._pending.update(batch)

    @property
    def pending(self) -> int:
        """Accesses not written yet."""
        with self._lock:
            return sum(self._pending.values())
