"""Reads sent through a session's own psycopg connection, past SQLAlchemy's result layer.

For the statements every turn runs several of (the rankings): building SQLAlchemy's
result (column metadata from the cursor's description, row objects) cost about 0.2 ms a
statement, as much as a ranking's own rows. A failure goes through SQLAlchemy's own error
handling, as from ``Session.execute``: its exception classes, ``hide_parameters``,
``handle_error`` listeners, and on a lost connection the connection invalidated and the
pool's older connections marked for replacement. SQLAlchemy's cursor events do not see
these statements.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any, cast

import psycopg
from sqlalchemy import text
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import Session


@lru_cache(maxsize=256)
def driver_sql(sql: str, dialect: Dialect) -> str:
    """``sql`` (with ``:name`` parameters, as for ``text()``) in the driver's own form."""
    return str(text(sql).compile(dialect=dialect))


def fetch_all(session: Session, sql: str, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    """The rows of ``sql`` (``:name`` parameters) run with ``params`` in ``session``."""
    connection = session.connection()
    statement = driver_sql(sql, connection.dialect)
    driver = cast("psycopg.Connection[Any]", connection.connection.driver_connection)
    cursor = driver.cursor()
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
