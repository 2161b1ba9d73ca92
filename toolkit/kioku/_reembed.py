"""``kioku reembed``: embed queued memories, or every memory after switching embedders."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import func, select, text, update

from kioku._db.models import Memory
from kioku._db.schema import serialised_setup, upgrade_schema
from kioku._db.vectors import EXACT_SEARCH_MAX_ROWS, set_vector_schema, stored_embedder
from kioku._deps import HasDeps, KiokuDeps
from kioku._embeddings import EmbedderSpec, embedding_text
from kioku._errors import ConfigurationError, one_line

Progress = Callable[[int, int], None]
"""Called with (done, total) after each batch."""


def reembed(store: HasDeps, *, batch_size: int = 64, progress: Progress | None = None) -> int:
    """Bring every vector in line with ``store.embedder``; returns how many were embedded.

    When the configured embedder differs from the one the database records, the column is
    retyped for the new dimension and every memory is queued; otherwise only memories
    whose embedding failed earlier are (re)embedded.

    Raises:
        ConfigurationError: the embedder failed. Before a switch nothing is changed (the new
            embedder is tried first); during the embedding, what is done stays done and the
            rest stays queued for the next run.
    """
    deps = store.deps
    spec = deps.embedder
    _queue(deps, spec)
    with deps.sessions() as session:
        total = int(session.scalar(select(func.count()).where(Memory.needs_embedding)) or 0)
    done = 0
    while embedded := _embed_batch(deps, spec, batch_size, done=done, total=total):
        done += embedded
        if progress is not None:
            progress(done, total)
    with deps.engine.begin() as connection:
        connection.execute(text("ANALYZE memories"))
    return done


def _queue(store: KiokuDeps, spec: EmbedderSpec) -> None:
    """Queue the memories without a vector; after an embedder switch, every memory.

    A switch retypes the column for ``spec``'s dimension first.

    Raises:
        ConfigurationError: ``spec`` cannot be switched to (nothing is changed).
    """
    with serialised_setup(store.engine):
        upgrade_schema(store.engine)
        with store.engine.begin() as connection:
            if stored_embedder(connection) != (spec.model, spec.dimension):
                _try_embedder(spec)  # an endpoint that cannot be used changes nothing
                set_vector_schema(
                    connection,
                    spec.model,
                    spec.dimension,
                    hnsw=store.settings.wants_hnsw_index(EXACT_SEARCH_MAX_ROWS),
                    limits=store.settings.memory_limits,
                )
                connection.execute(update(Memory).values(embedding=None, needs_embedding=True))
            connection.execute(
                update(Memory).where(Memory.embedding.is_(None)).values(needs_embedding=True)
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
            session.execute(
                update(Memory)
                .where(Memory.id == memory_id)
                .values(embedding=list(vector), needs_embedding=False)
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
