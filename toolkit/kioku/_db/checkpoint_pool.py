"""The checkpoint pool: the autocommit connections LangGraph's ``PostgresSaver`` expects.

Pinged on checkout only when idle for a while (:class:`IdleCheck`), prepared statements
only on direct connections, pipelines ended on their Sync (:class:`PoolerSafeConnection`).
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from kioku._config import PreparedStatements
from kioku._db.connection import PoolerSafeConnection
from kioku._db.direct import CHECKPOINT_THRESHOLD, prepare_when_direct
from kioku._db.engine import PING_AFTER_IDLE_SECONDS


class IdleCheck:
    """Checkout check for a psycopg pool: ping only connections idle for a while.

    ``ConnectionPool.check_connection`` on every checkout costs a round trip each time
    (about 22 an agent turn). As :func:`ping_when_idle` does for the engine, only a
    connection unused for ``idle_seconds`` (where a restarted server or a network timeout
    leaves dead ones) is pinged, and a dead one is replaced before use.

    A connection counts as used when it is checked out: it has been idle in the pool at
    most that long. The time is not taken when it comes back, because a pool with a
    ``reset`` callback hands every returned connection to a worker thread of its own
    (a queue and two thread switches per checkpoint write) instead of taking it back.

    Pass :meth:`check` as the pool's ``check`` and :meth:`stamp` as its ``configure``.
    """

    def __init__(
        self,
        idle_seconds: float = PING_AFTER_IDLE_SECONDS,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Ping connections idle for ``idle_seconds`` or more, as measured by ``clock``."""
        self.idle_seconds = idle_seconds
        self.pings = 0
        """Pings sent so far."""
        self._clock = clock
        self._last_used: weakref.WeakKeyDictionary[psycopg.Connection[Any], float] = (
            weakref.WeakKeyDictionary()
        )

    def stamp(self, connection: psycopg.Connection[Any]) -> None:
        """Record that ``connection`` was just made or checked out."""
        self._last_used[connection] = self._clock()

    def check(self, connection: psycopg.Connection[Any]) -> None:
        """Ping ``connection`` when it has been idle long enough; raise if it is dead.

        Either way it is checked out now: the time of its use.
        """
        now = self._clock()
        if now - self._last_used.get(connection, float("-inf")) >= self.idle_seconds:
            self.pings += 1
            ConnectionPool.check_connection(connection)
        self._last_used[connection] = now


POOL_TIMEOUT_SECONDS = 5.0
"""How long the checkpoint pool waits for a connection (its first one too)."""


def checkpoint_pool(
    url: str,
    *,
    idle_check: IdleCheck | None = None,
    max_size: int = 10,
    prepared_statements: PreparedStatements = "auto",
) -> ConnectionPool[PoolerSafeConnection]:
    """An open pool of the autocommit connections LangGraph's ``PostgresSaver`` expects.

    Returns once its first connection is made (raising ``PoolTimeout`` when that takes
    over :data:`POOL_TIMEOUT_SECONDS`), so no pool thread is still starting up after it.

    Statements are prepared only on connections that reach the server directly (a pooler
    in transaction mode cannot carry them; see :mod:`kioku._db.direct`), no startup
    options are sent, and connections are pinged on checkout only when idle
    (:class:`IdleCheck`).

    Args:
        url: the server's libpq URL (:func:`libpq_url`).
        idle_check: default: a new :class:`IdleCheck`.
        max_size: connections at most.
        prepared_statements: ``KIOKU_PREPARED_STATEMENTS``.
    """
    idle = idle_check or IdleCheck()

    def configure(connection: psycopg.Connection[Any]) -> None:
        prepare_when_direct(connection, prepared_statements, CHECKPOINT_THRESHOLD)
        idle.stamp(connection)

    pool = ConnectionPool(
        url,
        connection_class=PoolerSafeConnection,
        min_size=1,
        max_size=max_size,
        kwargs={"autocommit": True, "prepare_threshold": None, "row_factory": dict_row},
        configure=configure,
        check=idle.check,
        timeout=POOL_TIMEOUT_SECONDS,
        open=False,
    )
    # Its worker draws each connection's expiry jitter from the global `random` module.
    # Opened without waiting, that draw landed at a random later moment in the caller's
    # run, e.g. while Hypothesis was drawing an example (which it reports as an error).
    pool.open(wait=True, timeout=POOL_TIMEOUT_SECONDS)
    return pool
