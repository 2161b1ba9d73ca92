"""Statements sent through a session's own psycopg connection, past SQLAlchemy's result layer.

For the statements every turn runs (the turn state, the rankings, the update tool's):
building SQLAlchemy's result (column metadata from the cursor's description, row
objects) cost about 0.15 ms a statement, as much as a ranking's own rows. A failure goes
through SQLAlchemy's own error handling, as from ``Session.execute``: its exception
classes, ``hide_parameters``, ``handle_error`` listeners, and on a lost connection the
connection invalidated and the pool's older connections marked for replacement.

When something watches the connection's statements (cursor-execute listeners, such as
tracing or tests, or SQLAlchemy's statement log: ``echo``, or the ``sqlalchemy.engine``
logger at INFO), the statement runs through ``Session.execute`` instead, so that they
see it; the rows hold the same values.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any, cast

import psycopg
from psycopg.rows import namedtuple_row
from sqlalchemy import Connection, TextClause, text
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import Session


@lru_cache(maxsize=256)
def driver_sql(sql: str, dialect: Dialect) -> str:
    """``sql`` (with ``:name`` parameters, as for ``text()``) in the driver's own form."""
    return str(text(sql).compile(dialect=dialect))


@lru_cache(maxsize=256)
def _clause(sql: str) -> TextClause:
    return text(sql)


def watched(connection: Connection) -> bool:
    """Whether listeners or SQLAlchemy's statement log expect this connection's statements."""
    dispatch = connection.dispatch
    # ``_echo``: ``echo``, or the ``sqlalchemy.engine`` logger at INFO (private, but it is
    # what SQLAlchemy's own execution consults).
    return bool(connection._echo or dispatch.before_cursor_execute or dispatch.after_cursor_execute)


def fetch_all(
    session: Session, sql: str, params: Mapping[str, Any], *, named: bool = False
) -> list[Any]:
    """The rows of ``sql`` (``:name`` parameters) run with ``params`` in ``session``.

    Rows are sequences of the columns' values (tuples, or SQLAlchemy's rows when
    :func:`watched`); with ``named``, the columns are attributes too, so their names must
    be distinct identifiers (psycopg's ``namedtuple_row`` refuses others, after the
    statement ran).
    """
    connection = session.connection()
    if watched(connection):
        return list(session.execute(_clause(sql), params).all())
    statement = driver_sql(sql, connection.dialect)
    driver = cast("psycopg.Connection[Any]", connection.connection.driver_connection)
    cursor: psycopg.Cursor[Any] = (
        driver.cursor(row_factory=namedtuple_row) if named else driver.cursor()
    )
    try:
        cursor.execute(statement, params)
        return cursor.fetchall()
    except BaseException as exc:  # interrupts too, as SQLAlchemy's own execution does
        # Private, but the one place SQLAlchemy keeps what a failed statement means for
        # the connection and the pool; it raises (wrapped, or ``exc`` itself).
        connection._handle_dbapi_exception(exc, statement, dict(params), cast(Any, cursor), None)
        raise
    finally:
        cursor.close()
