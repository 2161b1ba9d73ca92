"""LoCoMo conversations loaded into kioku, one scope each (the protocol's step 1).

Shared by the retrieval bench (:mod:`bench.locomo`), the answer harness (:mod:`bench.answer`)
and the evidence step (:mod:`bench.evidence`). Protocol: ../shared/bench-data/README.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import insert, text

from bench.common import bench_data
from kioku import KiokuStore
from kioku._db.models import Memory, Server
from kioku._domain.visibility import Visibility
from kioku._embeddings import embedding_text
from kioku._search.aids import SearchAids

LINEAGE = 10_000
DEFAULT_DATA = bench_data("locomo-dev.json")


def session_time(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' → aware datetime."""
    return datetime.strptime(text, "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def evidence_ids(raw: list[str], known: set[str]) -> list[str]:
    """Normalise LoCoMo's evidence ids (see the data README) and keep those that exist."""
    ids = []
    for item in raw:
        for part in re.split(r"[;\s]+", item):
            match = re.fullmatch(r"D:?(\d+):0*(\d+)", part.strip())
            if match:
                candidate = f"D{int(match.group(1))}:{int(match.group(2))}"
                if candidate in known:
                    ids.append(candidate)
    return list(dict.fromkeys(ids))


def turns(sample: dict[str, Any]) -> list[tuple[str, str, datetime]]:
    """(dia_id, content, created_at) for every turn of a conversation."""
    conversation = sample["conversation"]
    rows = []
    for key, value in conversation.items():
        if not re.fullmatch(r"session_\d+", key):
            continue
        when = session_time(conversation[f"{key}_date_time"])
        for turn in value:
            content = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                content += f" [image: {turn['blip_caption']}]"
            rows.append((turn["dia_id"], content, when))
    return rows


@dataclass(frozen=True)
class LoadedConversation:
    """One conversation stored in its own scope."""

    scope: Visibility
    dia_ids: dict[int, str]
    """Memory id → the turn's ``dia_id``."""
    now: datetime
    """The latest session's date: "now" for the ranking's recency."""


def load_conversation(store: KiokuStore, sample: dict[str, Any]) -> LoadedConversation:
    """Store every turn of ``sample`` as one memory in a scope of its own (protocol step 1).

    Embeds with ``store.embedder``, then analyses the table and refreshes the store's
    search aids, as autovacuum and a running store would.
    """
    server = sample["sample_id"]
    rows = turns(sample)
    vectors = store.embedder.embeddings.embed_documents(
        [embedding_text(content) for _, content, _ in rows]
    )
    ids: dict[int, str] = {}
    with store.transaction() as session:
        session.execute(insert(Server).values(id=server, name=server))
        for (dia_id, content, when), vector in zip(rows, vectors, strict=True):
            memory_id = session.execute(
                insert(Memory)
                .values(
                    scope="server",
                    server_id=server,
                    persona_lineage_id=LINEAGE,
                    content=content,
                    embedding=vector,
                    created_at=when,
                    updated_at=when,
                )
                .returning(Memory.id)
            ).scalar_one()
            ids[memory_id] = dia_id
    with store.engine.connect() as connection:
        connection.execute(text("ANALYZE memories"))  # what autovacuum would do
        connection.commit()
    store.search_aids = SearchAids()  # read the new word statistics
    return LoadedConversation(Visibility(server, LINEAGE), ids, max(when for _, _, when in rows))
