"""``kioku reembed``: embed queued memories, or every memory after switching embedders."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from sqlalchemy import Connection, func, select, text, update

from kioku._db.models import Memory
from kioku._db.schema import UNLIMITED, serialised_setup, upgrade_schema
from kioku._db.vectors import (
    EXACT_SEARCH_MAX_ROWS,
    halfvec_text,
    set_vector_schema,
    stored_embedder,
)
from kioku._deps import HasDeps, KiokuDeps
from kioku._embeddings import EmbedderSpec, embedding_text
from kioku._errors import ConfigurationError, one_line

Progress = Callable[[int, int], None]
"""Called with (done, total) after each batch."""

_STORE_VECTOR = text(
    "UPDATE memories AS m SET embedding = v.embedding, needs_embedding = v.needs_embedding, "
    "embedded_with = v.embedded_with "
    "FROM kioku_vector_columns(CAST(:vector AS halfvec), :model) AS v WHERE m.id = :id "
    "RETURNING v.embedding IS NOT NULL"
)
"""Store a memory's new vector, unless the database records another model by now."""


class Reembedded(NamedTuple):
    """What :func:`reembed` did."""

    embedded: int
    """Memories embedded."""
    stale: int
    """Vectors found not recorded as the configured model's (saved by a process of an
    earlier release, which does not say its model), embedded again among ``embedded``."""


def reembed(
    store: HasDeps,
    *,
    batch_size: int = 64,
    progress: Progress | None = None,
    everything: bool = False,
) -> Reembedded:
    """Bring every vector in line with ``store.embedder``.

    When the configured embedder differs from the one the database records, the column is
    retyped for the new dimension and every memory is queued; otherwise the memories
    without a vector (the embedder failed, or a worker of another embedder wrote them)
    and those whose vector is not the configured model's are (re)embedded; with
    ``everything``, every memory (each keeps its vector until it has the new one). Workers
    may keep running: a vector they write of another model is never stored.

    Raises:
        ConfigurationError: the embedder failed. Before a switch nothing is changed (the new
            embedder is tried first); during the embedding, what is done stays done and the
            rest stays queued for the next run.
    """
    deps = store.deps
    spec = deps.embedder
    stale = _queue(deps, spec, everything=everything)
    with deps.sessions() as session:
        total = int(session.scalar(select(func.count()).where(Memory.needs_embedding)) or 0)
    done = 0
    while embedded := _embed_batch(deps, spec, batch_size, done=done, total=total):
        done += embedded
        if progress is not None:
            progress(done, total)
    with deps.engine.begin() as connection:
        connection.execute(text("ANALYZE memories"))
    return Reembedded(done, stale)


def _queue(store: KiokuDeps, spec: EmbedderSpec, *, everything: bool = False) -> int:
    """Queue the memories without a vector of ``spec``'s model (``everything``: all of them).

    A switch queues every memory too, and retypes the column for ``spec``'s dimension
    first. Returns how many vectors not recorded as ``spec``'s were found (none right after
    a switch: every one is queued).

    Raises:
        ConfigurationError: ``spec`` cannot be switched to (nothing is changed).
    """
    with serialised_setup(store.engine):
        upgrade_schema(store.engine)
        with store.engine.begin() as connection:
            if stored_embedder(connection) != (spec.model, spec.dimension):
                _try_embedder(spec)  # an endpoint that cannot be used changes nothing
                _switch(store, connection, spec)
            stale = connection.execute(
                update(Memory)
                .where(
                    Memory.embedding.is_not(None),
                    Memory.embedded_with.is_distinct_from(spec.model),
                )
                .values(embedding=None, needs_embedding=True, embedded_with=None)
            ).rowcount
            queue = update(Memory).values(needs_embedding=True)
            connection.execute(queue if everything else queue.where(Memory.embedding.is_(None)))
    return stale


def _switch(store: KiokuDeps, connection: Connection, spec: EmbedderSpec) -> None:
    """Record ``spec`` as the database's embedder and queue every memory, in one transaction.

    Writers lock ``memories`` before they share-lock the recorded model
    (``kioku_vector_columns``); locking in the same order cannot deadlock with them. A
    write committed before the lock is queued below; one after it finds the new model.
    """
    connection.execute(UNLIMITED)  # waits for the writes under way
    connection.execute(text("LOCK TABLE memories IN ACCESS EXCLUSIVE MODE"))
    set_vector_schema(
        connection,
        spec.model,
        spec.dimension,
        hnsw=store.settings.wants_hnsw_index(EXACT_SEARCH_MAX_ROWS),
        limits=store.settings.memory_limits,
    )
    connection.execute(
        update(Memory).values(embedding=None, needs_embedding=True, embedded_with=None)
    )


def _embed_batch(
    store: KiokuDeps, spec: EmbedderSpec, batch_size: int, *, done: int, total: int
) -> int:
    """Embed up to ``batch_size`` queued memories in one transaction; how many there were.

    Raises:
        ConfigurationError: the embedder failed (``done`` of ``total`` were embedded before).
    """
    with store.transaction() as session:
        rows = session.execute(
            select(Memory.id, Memory.content)
            .where(Memory.needs_embedding)
            .order_by(Memory.id)
            .limit(batch_size)
            .with_for_update(skip_locked=True)
        ).all()
        if not rows:
            return 0
        try:
            texts = [embedding_text(content) for _, content in rows]
            vectors = spec.embeddings.embed_documents(texts)
        except Exception as exc:
            raise ConfigurationError(
                f"embedding with {spec.model} failed after {done} of {total} memories "
                f"({one_line(exc)}); the rest stay queued: run `kioku reembed` again"
            ) from exc
        for (memory_id, _), vector in zip(rows, vectors, strict=True):
            parameters = {"id": memory_id, "vector": halfvec_text(vector), "model": spec.model}
            if not session.execute(_STORE_VECTOR, parameters).scalar_one():
                raise ConfigurationError(
                    f"the database no longer records {spec.model}: another `kioku reembed` "
                    "switched embedders while this one ran; the memories stay queued for it"
                )
    return len(rows)


def _try_embedder(spec: EmbedderSpec) -> None:
    """Embed one text with ``spec``, or say why it cannot be switched to."""
    try:
        [vector] = spec.embeddings.embed_documents(["kioku reembed: trying the embedder"])
    except Exception as exc:
        raise ConfigurationError(
            f"the embedder {spec.model} cannot be used ({one_line(exc)}); nothing was changed"
        ) from exc
    if len(vector) != spec.dimension:
        raise ConfigurationError(
            f"the embedder {spec.model} returned {len(vector)} dimensions, not "
            f"{spec.dimension}; nothing was changed"
        )
