"""Translation of driver errors into one kioku exception, in one place."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy.exc import SQLAlchemyError

logger = logging.getLogger("kioku._db")


class StorageError(Exception):
    """The database failed (unreachable, connection lost, timeout, constraint)."""


def describe(exc: BaseException) -> str:
    """First line of a driver error, prefixed with its class."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{exc.__class__.__name__}: {first}"


@contextmanager
def storage_errors(operation: str) -> Iterator[None]:
    """Turn SQLAlchemy/psycopg errors inside the block into :class:`StorageError` and log them."""
    try:
        yield
    except SQLAlchemyError as exc:
        orig = getattr(exc, "orig", None) or exc
        logger.error("kioku: database error during %s: %s", operation, describe(orig))
        raise StorageError(describe(orig)) from exc
