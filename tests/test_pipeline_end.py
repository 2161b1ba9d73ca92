"""Every pipeline kioku's connections run ends on its Sync: nothing is sent after it.

A message after the last Sync (psycopg sends a Flush there when the answers are not in
yet) can arrive at a pooler in transaction mode after it handed the server session back,
and then keeps a server session for an idle client (:mod:`kioku._db.connection`). The
wire is read with libpq's own trace.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
from psycopg import pq
from psycopg_pool import ConnectionPool
from sqlalchemy.orm import Session

from kioku import KiokuStore
from kioku._db.connection import PoolerSafeConnection
from kioku._db.driver import SentAhead, driver_connection, fetch_many

SLOW = "SELECT pg_sleep(0.05), 1"
"""Its answer is not in when the pipeline ends: where psycopg would follow up with a Flush."""


@contextmanager
def sent_messages(connection: psycopg.Connection[Any]) -> Iterator[list[str]]:
    """The names of the messages the client sends in the block (filled at its end)."""
    sent: list[str] = []
    with tempfile.TemporaryFile("w+") as trace:
        connection.pgconn.trace(trace.fileno())
        connection.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)
        try:
            yield sent
        finally:
            connection.pgconn.untrace()
        trace.seek(0)
        sent += [line.split("\t")[2].split()[0] for line in trace if line.startswith("F\t")]


def _ends_on_sync(sent: list[str]) -> None:
    """Each message is answered by the end: the last is a Sync or a simple query."""
    assert "Sync" in sent, sent
    assert sent[-1] in ("Sync", "Query"), f"nothing ends these: {sent}"


def _driver(session: Session) -> psycopg.Connection[Any]:
    return driver_connection(session.connection())


def test_the_engines_and_the_checkpoint_pools_connections_are_pooler_safe(
    store: KiokuStore,
) -> None:
    with store.reads() as session:
        assert isinstance(_driver(session), PoolerSafeConnection)
    with store.checkpointer().conn.connection() as connection:  # type: ignore[union-attr]
        assert isinstance(connection, PoolerSafeConnection)


def statements_sent_together(session: Session) -> None:
    fetch_many(session, [(SLOW, {}), (SLOW, {})])


def a_statement_sent_ahead(session: Session) -> None:
    SentAhead.send(session, _one((SLOW, {}))).result()


def _one(statement: tuple[str, dict[str, Any]]) -> Any:
    rows = yield statement
    return rows


def executemany(session: Session) -> None:
    with _driver(session).cursor() as cursor:
        cursor.executemany("SELECT pg_sleep(%s)", [(0.02,), (0.03,)])


@pytest.mark.parametrize("run", [statements_sent_together, a_statement_sent_ahead, executemany])
def test_every_pipeline_of_the_engines_ends_on_its_sync(
    store: KiokuStore, run: Callable[[Session], None]
) -> None:
    with store.reads() as session:
        session.connection()
        with sent_messages(_driver(session)) as sent:
            run(session)
    _ends_on_sync(sent)


def test_the_checkpointers_writes_end_on_their_sync(store: KiokuStore) -> None:
    pool = store.checkpointer().conn
    assert isinstance(pool, ConnectionPool)
    with (
        pool.connection() as driver,
        sent_messages(driver) as sent,
        driver.pipeline(),
        driver.cursor() as cursor,
    ):
        cursor.execute(SLOW)  # as PostgresSaver.put does
        cursor.execute(SLOW)
    _ends_on_sync(sent)
