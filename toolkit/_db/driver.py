"""Reads sent through a session's own psycopg connection, past SQLAlchemy's result layer.

For the statements every turn runs several of (the rankings): building SQLAlchemy's
result (column metadata from the cursor's description, row objects) cost about 0.2 ms a
statement, as much as a ranking's own rows. Errors are raised as ``Session.execute``
raises them (SQLAlchemy's exception classes; a connection the driver reports closed or
broken is invalidated), so callers and :func:`kioku._db.errors.storage_errors` see one kind.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any, cast

import psycopg
from sqlalchemy import text
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session


@lru_cache(maxsize=256)
def driver_sql(sql: str, dialect: Dialect) -> str:
    """``sql`` (with ``:name`` parameters, as for ``text()``) in the driver's own form."""
    return str(text(sql).compile(dialect=dialect))


def fetch_all(session: Session, sql: str, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    """The rows of ``sql`` (``:name`` parameters) run with ``params`` in ``session``."""
    connection = session.connection()
    dialect = connection.dialect
    statement = driver_sql(sql, dialect)
    driver = cast("psycopg.Connection[Any]", connection.connection.driver_connection)
    try:
        with driver.cursor() as cursor:
            cursor.execute(statement, params)
            return cursor.fetchall()
    except psycopg.Error as exc:
        lost = driver.closed or driver.broken  # the dialect's own disconnect test
        if lost:
            connection.invalidate(exc)
        raise DBAPIError.instance(
            statement,
            dict(params),
            exc,
            psycopg.Error,
            connection_invalidated=lost,
            dialect=dialect,
        ) from exc
