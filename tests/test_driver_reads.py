"""Statements through the session's own psycopg connection behave as ``Session.execute``."""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import pytest
from psycopg.pq import ExecStatus
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.exc import DataError, OperationalError

from kioku import KiokuSettings, KiokuStore
from kioku._db.driver import (
    SentAhead,
    Statement,
    _failed,
    driver_sql,
    fetch_all,
    fetch_many,
    idle_connection,
)
from kioku._db.engine import make_engine


def test_rows_come_back_as_tuples_with_named_parameters(store: KiokuStore) -> None:
    with store.reads() as session:
        rows = fetch_all(
            session, "SELECT CAST(:a AS int) + 1, 'a:b', '100%' WHERE CAST(:a AS int) > 0", {"a": 1}
        )
    assert rows == [(2, "a:b", "100%")]


def test_a_failing_read_raises_sqlalchemys_error_and_the_session_goes_on(
    store: KiokuStore,
) -> None:
    with store.reads() as session:
        with pytest.raises(DataError) as raised:
            fetch_all(session, "SELECT 1 / :zero", {"zero": 0})
        assert not raised.value.connection_invalidated
        assert "SELECT 1 / %(zero)s" in str(raised.value)
        assert fetch_all(session, "SELECT 2", {}) == [(2,)]


@pytest.mark.parametrize("failing", [0, 1, 2])
def test_a_failing_statement_sent_together_is_the_one_the_error_names(
    store: KiokuStore, failing: int
) -> None:
    """Of statements sent in one pipeline, the error names the one that failed."""
    statements: list[Statement] = [
        (f"SELECT {n} / :zero AS failing_{n}" if n == failing else f"SELECT {n}", {"zero": 0})
        for n in range(3)
    ]
    with store.reads() as session:
        with pytest.raises(DataError) as raised:
            fetch_many(session, statements)
        assert f"failing_{failing}" in str(raised.value)
        session.rollback()
        assert fetch_all(session, "SELECT 2", {}) == [(2,)]


class _Answered:
    """A cursor's answer as ``_failed`` reads it."""

    def __init__(self, status: ExecStatus | None) -> None:
        self.pgresult = None if status is None else SimpleNamespace(status=status)


OK, ERROR = ExecStatus.TUPLES_OK, ExecStatus.FATAL_ERROR


@pytest.mark.parametrize(
    ("answers", "sent", "sqlstate", "failed"),
    [
        ([OK, None, None], 1, None, 1),  # the client could not send the second
        ([OK, None, None], 2, "22012", 1),  # the server's error, read while sending the third
        ([None, None, None], 3, "22012", 0),  # read at the pipeline's end, before any rows
        ([OK, ERROR, None], 3, "22012", 1),  # read at the end, the error result kept
        ([OK, OK, ERROR], 3, "22012", 2),
    ],
)
def test_the_failed_statement_of_a_pipeline_is_told_by_its_answers(
    answers: list[ExecStatus | None], sent: int, sqlstate: str | None, failed: int
) -> None:
    cursors: Any = [_Answered(status) for status in answers]
    assert _failed(cursors, sent, SimpleNamespace(sqlstate=sqlstate)) == failed  # type: ignore[arg-type]


def test_a_lost_connection_is_invalidated_with_the_pools_older_ones(
    database_url: str, engine: Engine
) -> None:
    """As from ``Session.execute``: after a lost connection the pool replaces every
    connection older than the failure, so the next turns do not meet the dead ones."""
    admin = engine.execution_options(isolation_level="AUTOCOMMIT")
    own = make_engine(database_url, pool_size=3)
    store = KiokuStore(own, settings=KiokuSettings(database_url=database_url))
    try:
        first, second = store.reads(), store.reads()
        pids = [
            s.connection().connection.driver_connection.info.backend_pid for s in (first, second)
        ]
        first.close()
        second.close()
        with admin.connect() as other:
            for pid in pids:
                other.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        with store.reads() as session:
            connection = session.connection()
            with pytest.raises(OperationalError) as raised:
                fetch_all(session, "SELECT 1", {})
            assert raised.value.connection_invalidated
            assert connection.invalidated
        with store.reads() as one, store.reads() as two:  # the other dead one is replaced
            assert [fetch_all(s, "SELECT 3", {}) for s in (one, two)] == [[(3,)], [(3,)]]
    finally:
        store.close()
        own.dispose()


def test_a_failure_hides_the_parameters_when_the_engine_says_so(
    database_url: str,
) -> None:
    url = make_engine(database_url).url
    hidden = create_engine(url, hide_parameters=True)
    store = KiokuStore(hidden, settings=KiokuSettings(database_url=database_url))
    try:
        with store.reads() as session, pytest.raises(DataError) as raised:
            fetch_all(session, "SELECT 1 / :secret", {"secret": 0})
        assert "parameters hidden" in str(raised.value)
        assert "'secret': 0" not in str(raised.value)
    finally:
        store.close()
        hidden.dispose()


def test_the_driver_form_is_computed_once_per_statement(store: KiokuStore) -> None:
    dialect = store.engine.dialect
    first = driver_sql("SELECT :x", dialect)
    assert first == "SELECT %(x)s"
    assert driver_sql("SELECT :x", dialect) is first


def test_named_rows_have_their_columns_as_attributes(store: KiokuStore) -> None:
    with store.reads() as session:
        [row] = fetch_all(session, "SELECT 1 AS one, 'b' AS two", {}, named=True)
    assert (row.one, row.two) == (1, "b") and tuple(row) == (1, "b")


def test_cursor_listeners_see_the_statement_and_get_the_same_rows(store: KiokuStore) -> None:
    """Tracing hooked on SQLAlchemy's cursor events (and tests) still sees every statement."""
    sql = "SELECT CAST(:a AS int) AS a, 'x' AS b"
    with store.reads() as session:
        fast = fetch_all(session, sql, {"a": 7}, named=True)
    seen: list[str] = []

    def before(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen.append(statement)

    event.listen(store.engine, "before_cursor_execute", before)
    try:
        with store.reads() as session:
            watched = fetch_all(session, sql, {"a": 7}, named=True)
    finally:
        event.remove(store.engine, "before_cursor_execute", before)
    assert seen == ["SELECT CAST(%(a)s AS int) AS a, 'x' AS b"]
    assert [tuple(r) for r in watched] == [tuple(r) for r in fast] == [(7, "x")]
    assert (watched[0].a, watched[0].b) == (fast[0].a, fast[0].b)


def test_sqlalchemys_statement_log_sees_the_statement(
    store: KiokuStore, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="sqlalchemy.engine")
    with store.reads() as session:
        assert fetch_all(session, "SELECT 'logged' AS word", {}) == [("logged",)]
    assert "SELECT 'logged' AS word" in caplog.text


def test_a_pool_has_a_connection_to_spare_until_its_size_is_in_use(database_url: str) -> None:
    """A ranking sent ahead takes a second connection only when one is idle or the pool
    may open one below its size: it never waits for one while its build holds another."""
    engine = make_engine(database_url, pool_size=2)
    try:
        assert idle_connection(engine)  # nothing opened yet: room to open one
        with engine.connect(), engine.connect():
            assert not idle_connection(engine)  # both in use: no waiting, no overflow
        assert idle_connection(engine)  # both idle again
        with engine.connect():
            assert idle_connection(engine)
    finally:
        engine.dispose()


def test_only_a_queue_pool_spares_a_connection(database_url: str) -> None:
    """A pool that would hand over the connection in use (``StaticPool``) or open a new
    one each time (``NullPool``) never has one to spare."""
    from sqlalchemy.pool import NullPool, StaticPool

    for pool in (NullPool, StaticPool):
        engine = create_engine(make_engine(database_url).url, poolclass=pool)
        try:
            assert not idle_connection(engine)
        finally:
            engine.dispose()


def test_work_sent_ahead_raises_an_interrupt_and_can_be_discarded() -> None:
    """Settling stores a failure for ``result`` but lets an interrupt through; discarding
    ends the work unfinished and releases it once."""
    closed: list[str] = []

    def interrupted() -> Any:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        SentAhead(interrupted, lambda: closed.append("interrupted")).settle()

    def failing() -> Any:
        raise ValueError("no rows")

    failed = SentAhead(failing, lambda: closed.append("failed"))
    failed.settle()
    with pytest.raises(ValueError, match="no rows"):
        failed.result()

    drained: list[bool] = []
    unwanted = SentAhead(failing, lambda: closed.append("discarded"), lambda: drained.append(True))
    unwanted.discard()
    unwanted.settle()  # nothing more to do
    assert drained == [True]
    assert closed == ["interrupted", "failed", "discarded"]
