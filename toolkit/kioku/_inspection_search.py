"""An operator's search of one scope: kioku's hybrid search, scores shown, no floor."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import select

from kioku._awaiting import embed_query
from kioku._db.models import Memory
from kioku._deps import HasDeps
from kioku._domain.scopes import PersonalScope, ServerScope
from kioku._domain.visibility import Visibility
from kioku._embeddings import embedding_text
from kioku._inspection import StoredMemory
from kioku._search.engine import rank_candidates


def search_memories(
    store: HasDeps, scope: ServerScope | PersonalScope, query: str, *, limit: int = 10
) -> list[tuple[StoredMemory, float]]:
    """``scope``'s memories best matching ``query`` (kioku's hybrid search), with scores.

    No relevance floor: an operator looking is shown the nearest even when weak.
    """
    deps = store.deps
    if isinstance(scope, ServerScope):
        visibility = Visibility(scope.server_id, scope.lineage_id)
    else:
        visibility = Visibility("", scope.lineage_id, (scope.user_id,), include_server=False)
    vector = embed_query(deps.embedder.embeddings, embedding_text(query))
    with deps.reads() as session:
        hits = rank_candidates(
            session, visibility, query, vector, now=datetime.now(UTC), limit=limit
        ).hits()
        rows = {
            row.id: row
            for row in session.scalars(select(Memory).where(Memory.id.in_([h.id for h in hits])))
        }
        return [(StoredMemory.of(rows[hit.id]), hit.score) for hit in hits if hit.id in rows]
