"""Whether this process's embedder is still the one the database records (``kioku_meta``).

``kioku reembed`` may switch embedders while workers run. The database never stores a
vector of a model other than the one it records (``kioku_vector_columns``, migration
0023); a worker learns of a switch from its own write (the vector it sent was not stored),
from the error a vector of another size meets, or from what every context build and search
reads first (the turn state, the settings: both carry the recorded embedder), and from
then on writes its memories queued and searches by text alone, until the database records
its embedder again. Nothing else is read on the way there: while the embedders agree, no
turn pays for this.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from psycopg.errors import DataException
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from kioku._awaiting import embed_query
from kioku._db.vectors import stored_embedder
from kioku._embeddings import embedding_text

if TYPE_CHECKING:
    from kioku._deps import KiokuDeps

logger = logging.getLogger("kioku._embeddings")

RECHECK_SECONDS = 30.0
"""How often a worker switched away from reads the database's embedder again."""

T = TypeVar("T")

Embedder = tuple[str, int]
"""A model and its dimension, as ``kioku_meta`` records them."""


@dataclass
class RecordedEmbedder:
    """What this process last learnt of the database's embedder (shared by its threads)."""

    other: Embedder | None = None
    """The embedder the database records instead of this process's (``None``: the same, as
    far as this process knows)."""
    checked: float = 0.0
    """When ``other`` was last read (``time.monotonic``)."""


def other_embedder(stored: Embedder | None, own: Embedder) -> Embedder | None:
    """The embedder a database records when it is not ``own`` (one not set up: none)."""
    return stored if stored is not None and stored != own else None


def vectors_usable(deps: KiokuDeps) -> bool:
    """Whether to embed and search by vector with ``deps.embedder``.

    False once the database was found to record another embedder; that record is read
    again at most every :data:`RECHECK_SECONDS`, and only while it differs.
    """
    known = deps.recorded
    if known.other is None:
        return True
    if time.monotonic() - known.checked >= RECHECK_SECONDS:
        reread(deps)
    return known.other is None


def reread(deps: KiokuDeps) -> bool:
    """Read the database's embedder again; whether it is this process's.

    A database that cannot be read leaves what was known (the caller's own statement
    reports that failure).
    """
    read_at = deps.recorded.checked = time.monotonic()
    try:
        with deps.reads() as session:
            stored = stored_embedder(session.connection())
    except SQLAlchemyError:
        return deps.recorded.other is None
    return noted(deps, stored, read_at)


def noted(deps: KiokuDeps, stored: Embedder | None, read_at: float) -> bool:
    """Note ``stored``, the database's embedder as read from ``read_at`` (``time.monotonic``).

    Returns whether it is this process's. A change either way is logged; a read begun
    before another thread's newer one changes nothing (it may predate a switch).
    """
    known, spec = deps.recorded, deps.embedder
    if read_at < known.checked:
        return known.other is None
    known.checked = read_at
    was, known.other = known.other, other_embedder(stored, (spec.model, spec.dimension))
    if known.other is not None and was is None:
        logger.warning(
            "kioku: the database's memories are now embedded with %s (%d dimensions), not "
            "%s: this process saves its memories queued and searches by text until it is "
            "restarted with that embedder (KIOKU_EMBEDDINGS); then run `kioku reembed`",
            *known.other,
            spec.model,
        )
    elif known.other is None and was is not None:
        logger.warning("kioku: the database records %s again; vectors are back", spec.model)
    return known.other is None


def vector_refused(deps: KiokuDeps, exc: BaseException | None) -> bool:
    """Whether ``exc`` is a vector meeting a column of another size after a switch.

    pgvector refuses such a vector as a data exception; when the database then records
    another embedder, that is noted (:func:`vectors_usable` turns false) and the caller
    may run its statement again without a vector.
    """
    while exc is not None and not isinstance(exc, DataException):
        exc = exc.orig if isinstance(exc, DBAPIError) else exc.__cause__
    return exc is not None and not reread(deps)


def again_by_text(
    deps: KiokuDeps, attempt: Callable[[], T], undo: Callable[[], object] = lambda: None
) -> T:
    """``attempt()``, or, when its vector met a column of another size, ``attempt()`` again.

    The switch is noted first (:func:`vector_refused`), so the second attempt, which asks
    :func:`vectors_usable` afresh, goes by text; ``undo`` readies the attempt's session.
    The one way every write and search recovers from ``kioku reembed`` switching sizes.
    """
    try:
        return attempt()
    except SQLAlchemyError as exc:
        if not vector_refused(deps, exc):
            raise
    undo()
    return attempt()


def query_embedding(deps: KiokuDeps, query: str) -> list[float] | None:
    """``query`` embedded by ``deps``'s embedder, or ``None``: search by text alone.

    ``None`` when the embedder fails, or while the database records another embedder
    (:func:`vectors_usable`). The one way every search (the tool, the context build, the
    LangGraph store) embeds its query.
    """
    if not vectors_usable(deps):
        return None
    try:
        return embed_query(deps.embedder.embeddings, embedding_text(query))
    except Exception as exc:
        logger.warning("kioku: embedding the query failed (%s); searching by text", exc)
        return None
