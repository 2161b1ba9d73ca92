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

Work that needs the rows of one statement before it knows the next is written as
:data:`Steps`: a generator that yields each statement and is sent its rows.
:func:`run_steps` runs one such piece of work; :func:`run_together` runs several,
sending the statements they are waiting on together, in one round trip.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping, Sequence
from contextlib import ExitStack, suppress
from functools import lru_cache
from typing import Any, Generic, NamedTuple, TypeVar, cast

import psycopg
from psycopg.pq import ExecStatus
from psycopg.rows import namedtuple_row
from sqlalchemy import Connection, Engine, TextClause, text
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import Session
from sqlalchemy.pool import QueuePool


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


def driver_connection(connection: Connection) -> psycopg.Connection[Any]:
    """The psycopg connection under ``connection`` (kioku's engines are psycopg 3 ones)."""
    return cast("psycopg.Connection[Any]", connection.connection.driver_connection)


def _cursor(connection: Connection, *, named: bool) -> psycopg.Cursor[Any]:
    """A cursor of ``connection``'s psycopg connection; with ``named``, rows as namedtuples."""
    driver = driver_connection(connection)
    return driver.cursor(row_factory=namedtuple_row) if named else driver.cursor()


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
    cursor = _cursor(connection, named=named)
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


Statement = tuple[str, Mapping[str, Any]]
"""A statement (``:name`` parameters, as for ``text()``) and its parameters."""


class Named(NamedTuple):
    """A :data:`Statement` whose rows have their columns as attributes too (``named``)."""

    sql: str
    params: Mapping[str, Any]


T = TypeVar("T")
Steps = Generator[Statement, list[Any], T]
"""Work that yields each statement it needs, is sent the statement's rows, and returns
its result."""


def run_steps(session: Session, steps: Steps[T]) -> T:
    """``steps``' result, each statement run in ``session`` (:func:`fetch_all`)."""
    return run_together(session, [steps])[0]


def run_together(session: Session, work: Sequence[Steps[T]]) -> list[T]:
    """Each of ``work``'s results; the statements they wait on at once sent together."""
    results: dict[int, T] = {}
    waiting: dict[int, Statement] = {}
    for index, steps in enumerate(work):
        _advance(steps, index, None, waiting, results)
    while waiting:
        sent = list(waiting.items())
        waiting = {}
        for (index, _), rows in zip(sent, fetch_many(session, [s for _, s in sent]), strict=True):
            _advance(work[index], index, rows, waiting, results)
    return [results[index] for index in range(len(work))]


def _advance(
    steps: Steps[T],
    index: int,
    rows: list[Any] | None,
    waiting: dict[int, Statement],
    results: dict[int, T],
) -> None:
    """Give ``steps`` its rows (``None`` to start it); note its next statement or result."""
    try:
        waiting[index] = next(steps) if rows is None else steps.send(rows)
    except StopIteration as finished:
        results[index] = finished.value


def fetch_many(session: Session, statements: Sequence[Statement]) -> list[list[Any]]:
    """The rows of each of ``statements``, sent in one pipeline (one round trip).

    One statement, or a connection something watches (:func:`watched`), runs them one by
    one through :func:`fetch_all`. The rows of a :class:`Named` statement are named.
    """
    connection = session.connection()
    if len(statements) == 1 or watched(connection):
        return [
            fetch_all(session, *statement, named=isinstance(statement, Named))
            for statement in statements
        ]
    driver = driver_connection(connection)
    compiled = [(driver_sql(sql, connection.dialect), params) for sql, params in statements]
    cursors = [_cursor(connection, named=isinstance(s, Named)) for s in statements]
    sent = 0
    try:
        with driver.pipeline():
            for cursor, (statement, params) in zip(cursors, compiled, strict=True):
                cursor.execute(statement, params)
                sent += 1
        return [cursor.fetchall() for cursor in cursors]
    except BaseException as exc:  # as in fetch_all
        statement, params = compiled[_failed(cursors, sent, exc)]
        connection._handle_dbapi_exception(exc, statement, dict(params), cast(Any, None), None)
        raise
    finally:
        for cursor in cursors:
            cursor.close()


def _failed(cursors: Sequence[psycopg.Cursor[Any]], sent: int, exc: BaseException) -> int:
    """Which statement of a pipeline failed, ``sent`` of them sent when ``exc`` was raised.

    An error of the client's own (no SQLSTATE: a parameter it could not send) is the
    statement it was sending. The server's is the first statement without rows: it
    answers in order and, after an error, skips the rest of the pipeline, so the
    statements before the failing one have their rows, it has its error or no result
    yet (psycopg raises as soon as it reads the error, while sending or after), and
    those after it none.
    """
    if sent < len(cursors) and getattr(exc, "sqlstate", None) is None:
        return sent
    for index, cursor in enumerate(cursors):
        result = cursor.pgresult
        if result is None or result.status not in (ExecStatus.TUPLES_OK, ExecStatus.COMMAND_OK):
            return index
    return len(cursors) - 1


class SentAhead(Generic[T]):
    """Work whose first statement is already on its way, on a connection of its own.

    :meth:`send` sends the statement in a pipeline and returns at once: the server runs
    it while the caller does other work, such as another connection's round trip, with
    no thread. :meth:`result` then reads its rows and runs any further statements. Call
    :meth:`settle` in a ``finally``: it ends the pipeline whatever happened meanwhile, so
    the connection goes back to its pool clean.
    :meth:`discard` ends it without finishing the work, when its result is not wanted.
    """

    def __init__(
        self,
        finish: Callable[[], T],
        close: Callable[[], None],
        drain: Callable[[], object] = lambda: None,
    ) -> None:
        """Work that ``finish`` completes and ``close`` releases.

        ``drain`` only ends the pipeline, for :meth:`discard`.
        """
        self._finish, self._close, self._drain = finish, close, drain
        self._outcome: tuple[T] | Exception | None = None

    @classmethod
    def send(
        cls, session: Session, steps: Steps[T], close: Callable[[], None] = lambda: None
    ) -> SentAhead[T]:
        """``steps``' first statement sent in ``session``, not waited for."""
        try:
            first = next(steps)
        except StopIteration as done:
            value = cast(T, done.value)
            return cls(lambda: value, close)
        if watched(session.connection()):  # the listeners see it run, later
            return cls(lambda: _continued(session, steps, fetch_many(session, [first])[0]), close)
        rows = _sent(session, first)
        return cls(lambda: _continued(session, steps, rows()), close, rows)

    def settle(self) -> None:
        """Finish the work (its outcome kept for :meth:`result`) and release its session.

        An interrupt (any ``BaseException`` that is not an ``Exception``) is raised at once.
        """
        if self._outcome is not None:
            return
        try:
            self._outcome = (self._finish(),)
        except Exception as exc:
            self._outcome = exc
        finally:
            self._close()

    def discard(self) -> None:
        """End the pipeline and release the session, the work left unfinished."""
        if self._outcome is not None:
            return
        self._outcome = RuntimeError("discarded")
        try:
            with suppress(Exception):
                self._drain()
        finally:
            self._close()

    def result(self) -> T:
        """The work's result (settled first if need be); its failure raised again."""
        self.settle()
        if isinstance(self._outcome, Exception):
            raise self._outcome
        return cast(tuple[T], self._outcome)[0]


def idle_connection(engine: Engine) -> bool:
    """Whether ``engine``'s pool has a connection to spare, without waiting or overflowing.

    One no one is using, or room below its size to open one; only a ``QueuePool`` (as
    kioku's engines have) says so. Another pool could hand over the very connection in
    use (``StaticPool``) or open a new one each time (``NullPool``).
    """
    pool = engine.pool
    if not isinstance(pool, QueuePool):
        return False
    return pool.checkedin() > 0 or pool.checkedout() < pool.size()


def _sent(session: Session, first: Statement) -> Callable[[], list[Any]]:
    """``first`` sent in a pipeline of ``session``'s connection; the call ends it, its rows.

    A failure goes through SQLAlchemy's error handling, as in :func:`fetch_all`.
    """
    connection = session.connection()
    driver = driver_connection(connection)
    statement, params = driver_sql(first[0], connection.dialect), first[1]
    cursor = _cursor(connection, named=isinstance(first, Named))
    pipeline = ExitStack()

    def failed(exc: BaseException) -> None:
        with suppress(Exception):  # the failure that ended it, reported again
            pipeline.close()
        cursor.close()
        connection._handle_dbapi_exception(exc, statement, dict(params), cast(Any, cursor), None)

    try:
        pipeline.enter_context(driver.pipeline())
        cursor.execute(statement, params)
    except BaseException as exc:
        failed(exc)
        raise

    def rows() -> list[Any]:
        try:
            pipeline.close()  # the pipeline's end: its sync, and the rows
            found = cursor.fetchall()
        except BaseException as exc:
            failed(exc)
            raise
        cursor.close()
        return found

    return rows


def _continued(session: Session, steps: Steps[T], rows: list[Any]) -> T:
    """``steps`` given the rows of the statement it waited on, then run to its result."""
    try:
        statement = steps.send(rows)
    except StopIteration as done:
        return cast(T, done.value)
    return run_steps(session, _resumed(statement, steps))


def _resumed(first: Statement, steps: Steps[T]) -> Steps[T]:
    """``steps`` as a fresh generator whose first statement is ``first`` (already made)."""
    rows = yield first
    try:
        while True:
            rows = yield steps.send(rows)
    except StopIteration as done:
        return cast(T, done.value)
