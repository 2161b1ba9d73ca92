"""The turn's capture into short-term memory, beside the agent's last checkpoint (issue #36).

A capture is a round trip of its own at the end of the turn, and the agent then writes its
last checkpoint, another. When the agent's checkpointer is the store's
(:class:`~kioku._db.saver.PostgresSaverForBoth`) and has loaded this thread, the capture
runs in a thread of its own while that checkpoint is written; the checkpointer saves it
only once the capture is done (:meth:`~kioku._db.saver.PostgresSaverForBoth.hold`), so the
turn still ends with its capture made. With another checkpointer, or in a thread whose
last capture in this process failed, the capture runs in the step, as before: the
thread is trimmed only once it succeeded.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import psycopg
from langgraph.config import get_config
from sqlalchemy.exc import SQLAlchemyError

from kioku._db.errors import describe
from kioku._db.saver import PostgresSaverForBoth

logger = logging.getLogger(__name__)

SaverOf = Callable[[], "PostgresSaverForBoth | None"]
"""The store's checkpointer, if it was made (``KiokuStore.made_checkpointer``)."""


class Captures:
    """Runs captures in the step or beside the checkpoint (module docstring)."""

    WORKERS = 2
    """Captures running at once, across the turns of concurrent runs."""
    MAX_FAILED = 10_000
    """Threads remembered as having a failed last capture (the oldest forgotten first)."""

    def __init__(self, saver: SaverOf) -> None:
        """Capture beside the checkpoints of ``saver()``, when it serves the thread."""
        self._saver = saver
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._failed: OrderedDict[str, None] = OrderedDict()

    def capture(self, run: Callable[[], object]) -> bool:
        """Run the capture ``run``; whether the thread may be trimmed now.

        ``False`` when it ran in the step and failed (logged): the thread keeps its
        messages for the next turn's capture.
        """
        thread_id = _running_thread()
        saver = self._saver()
        if thread_id is None or saver is None or not saver.serves(thread_id):
            return self._run(thread_id, run)
        with self._lock:
            failed_last = thread_id in self._failed
            if self._pool is None and not failed_last:
                self._pool = ThreadPoolExecutor(self.WORKERS, "kioku-capture")
            pool = self._pool
        if failed_last or pool is None:
            return self._run(thread_id, run)
        work: Future[bool] = pool.submit(self._run, thread_id, run)
        saver.hold(thread_id, work)
        return True

    def _run(self, thread_id: str | None, run: Callable[[], object]) -> bool:
        """``run()``; a database failure is logged (passive capture is best effort)."""
        try:
            run()
        except (psycopg.Error, SQLAlchemyError) as exc:
            logger.error("kioku: short-term memory capture skipped: %s", describe(exc))
            self._note(thread_id, failed=True)
            return False
        self._note(thread_id, failed=False)
        return True

    def _note(self, thread_id: str | None, *, failed: bool) -> None:
        if thread_id is None:
            return
        with self._lock:
            if not failed:
                self._failed.pop(thread_id, None)
                return
            self._failed[thread_id] = None
            while len(self._failed) > self.MAX_FAILED:
                self._failed.popitem(last=False)


def _running_thread() -> str | None:
    """The thread id of the run under way (``None`` outside a run, or without one)."""
    try:
        thread_id = get_config().get("configurable", {}).get("thread_id")
    except RuntimeError:  # not inside a runnable
        return None
    return None if thread_id is None else str(thread_id)
