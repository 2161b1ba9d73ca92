"""Reads through the session's own psycopg connection fail as ``Session.execute`` does."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.exc import DataError, OperationalError

from kioku import KiokuStore
from kioku._db.driver import driver_sql, fetch_all


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


def test_a_lost_connection_is_invalidated(store: KiokuStore, engine: Engine) -> None:
    admin = engine.execution_options(isolation_level="AUTOCOMMIT")
    with store.reads() as session:
        connection = session.connection()
        pid = connection.connection.driver_connection.info.backend_pid
        with admin.connect() as other:
            other.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        with pytest.raises(OperationalError) as raised:
            fetch_all(session, "SELECT 1", {})
        assert raised.value.connection_invalidated
        assert connection.invalidated
    with store.reads() as session:  # the pool hands out a working connection again
        assert fetch_all(session, "SELECT 3", {}) == [(3,)]


def test_the_driver_form_is_computed_once_per_statement(store: KiokuStore) -> None:
    dialect = store.engine.dialect
    first = driver_sql("SELECT :x", dialect)
    assert first == "SELECT %(x)s"
    assert driver_sql("SELECT :x", dialect) is first
