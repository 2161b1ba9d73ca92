"""kioku's psycopg connection: a pipeline ends on its Sync, with nothing sent after it.

psycopg ends a pipeline (``with connection.pipeline()``, and the one ``executemany``
opens for itself) by sending a Sync, then, when the results are not in yet, a Flush. A
pooler in transaction mode (PgBouncer and the like) hands the server session back to its
pool on the Sync's answer; when the Flush arrives after that answer (a thread descheduled
on a busy machine is enough), the pooler takes it for a new request, gives it a server
session and keeps that session for this client, which expects nothing more and goes back
to its own pool idle. Until that client is used again, the server session serves nobody
else: with a small pool, every other client waits out the pooler's ``query_wait_timeout``
and is disconnected. A Sync flushes the server's output by itself, so the Flush is never
needed: these pipelines end on their Sync and read the answers it brings.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg.abc import PQGen


class SyncEndedPipeline(psycopg.Pipeline):
    """A pipeline whose end sends a Sync and nothing after it (module docstring)."""

    def _exit_gen(self) -> PQGen[None]:
        try:
            self._enqueue_sync()
            yield from self._communicate_gen()
        finally:
            yield from self._fetch_gen(flush=False)


class PoolerSafeConnection(psycopg.Connection[Any]):
    """A psycopg connection whose pipelines are :class:`SyncEndedPipeline` objects.

    Made by kioku's engines and checkpoint pool alike.
    """

    @contextmanager
    def pipeline(self) -> Iterator[psycopg.Pipeline]:
        """Context manager to switch the connection into pipeline mode (as psycopg's)."""
        with self.lock:
            self._check_connection_ok()
            if (pipeline := self._pipeline) is None:
                pipeline = self._pipeline = SyncEndedPipeline(self)
        try:
            with pipeline:
                yield pipeline
        finally:
            if pipeline.level == 0:
                with self.lock:
                    self._pipeline = None

    @contextmanager
    def _pipeline_nolock(self) -> Iterator[psycopg.Pipeline]:
        """The pipeline ``executemany`` opens for itself, its caller holding the lock."""
        pipeline = self._pipeline = SyncEndedPipeline(self, _no_lock=True)
        try:
            with pipeline:
                yield pipeline
        finally:
            self._pipeline = None
