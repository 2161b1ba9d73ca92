"""The sweeper: deletes idle short-term memory and applies history retention.

``kioku sweep`` runs it once; long-lived processes (the per-turn graph, the MCP server)
run it on a timer every ``KIOKU_SWEEP_INTERVAL_MINUTES``. Several processes may run
timers: an advisory lock lets one of them sweep at a time.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import text

from kioku._deps import HasDeps
from kioku._stm.store import ShortTermMemory

logger = logging.getLogger(__name__)

_SWEEP_LOCK_KEY = 0x6B696F6B7573  # "kiokus"
_TRY_LOCK = text("SELECT pg_try_advisory_xact_lock(:k)")
_EXPIRE_HISTORY = text(
    "DELETE FROM memory_history WHERE created_at < now() - make_interval(secs => :seconds)"
)


@dataclass(frozen=True, slots=True)
class SweepResult:
    """What one sweep did (``ran`` is ``False`` when another process was sweeping)."""

    ran: bool
    deleted_threads: int = 0
    history_rows_deleted: int = 0


def sweep(store: HasDeps) -> SweepResult:
    """Run one sweep unless another process is running one.

    Deletes history rows older than ``KIOKU_HISTORY_RETENTION_DAYS`` and short-term memory
    entries idle longer than ``SHORT_TERM_MEMORY_RETENTION_DAYS``, in one transaction
    under a transaction-scoped advisory lock (so it holds behind a pooler in transaction
    mode, where a session lock could be taken and released on different connections).
    """
    deps = store.deps
    settings = deps.settings
    with deps.transaction() as session:
        if not session.execute(_TRY_LOCK, {"k": _SWEEP_LOCK_KEY}).scalar():
            return SweepResult(ran=False)
        seconds = timedelta(days=settings.history_retention_days).total_seconds()
        expired = session.execute(_EXPIRE_HISTORY, {"seconds": seconds})
        history = int(getattr(expired, "rowcount", 0))
        retention = timedelta(days=settings.stm_retention_days)
        deleted = ShortTermMemory(deps).sweep(retention=retention, session=session)
    return SweepResult(True, deleted.deleted_threads, history)


class SweepTimer:
    """Runs :func:`sweep` every ``interval`` in a daemon thread until stopped."""

    def __init__(self, store: HasDeps, interval: timedelta) -> None:
        """Sweep ``store`` every ``interval`` (the first sweep after one interval)."""
        self.deps = store.deps
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kioku-sweeper", daemon=True)

    def start(self) -> None:
        """Start the timer thread."""
        self._thread.start()

    def stop(self) -> None:
        """Stop the timer (a sweep in progress finishes first)."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=30)

    def _run(self) -> None:
        while not self._stop.wait(self.interval.total_seconds()):
            try:
                result = sweep(self.deps)
            except Exception as exc:  # the next round tries again
                logger.warning("kioku: sweep failed (%s); retrying in %s", exc, self.interval)
                continue
            if result.ran:
                logger.info("kioku: swept %s", result)
