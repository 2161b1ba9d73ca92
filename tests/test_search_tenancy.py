"""One tenant's data never changes another tenant's search results (issue #15)."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import insert, text

from kioku import KiokuStore
from kioku._db.models import Memory, Server
from kioku._domain.visibility import Visibility
from kioku._search.aids import SearchAids
from kioku._search.engine import rank_candidates
from kioku._search.terms import (
    MIN_COMMON_DOCS,
    TermShares,
    combined_shares,
    distinctive_words,
)

LINEAGE = 10_000
NOW = datetime(2026, 11, 1, tzinfo=UTC)
QUERY = "which tea does Alice brew in the garden"


def _fill(store: KiokuStore, server: str, contents: list[str]) -> None:
    vectors = store.embedder.embeddings.embed_documents(contents)
    with store.transaction() as session:
        session.execute(insert(Server).values(id=server, name=server))
        session.execute(
            insert(Memory),
            [
                {
                    "scope": "server",
                    "server_id": server,
                    "persona_lineage_id": LINEAGE,
                    "content": content,
                    "embedding": vector,
                    "created_at": NOW,
                    "updated_at": NOW,
                }
                for content, vector in zip(contents, vectors, strict=True)
            ],
        )


def _search(store: KiokuStore, server: str) -> list[tuple[int, float, int | None, int | None]]:
    aids = SearchAids()  # nothing remembered from earlier searches
    with store.sessions() as session:
        hits = rank_candidates(
            session,
            Visibility(server, LINEAGE),
            QUERY,
            store.embedder.embeddings.embed_query(QUERY),
            now=NOW,
            limit=10,
            aids=aids,
        ).hits()
    return [(hit.id, hit.score, hit.vector_rank, hit.text_rank) for hit in hits]


def test_a_scope_ranks_the_same_whatever_other_scopes_hold(store: KiokuStore) -> None:
    own = [f"Alice keeps note {i} about the shed" for i in range(40)] + [
        "Alice brews sencha tea every morning",
        "Bob waters the garden on Sundays",
        "Alice planted mint in the garden",
        "The kettle is broken",
    ]
    _fill(store, "tenant-a", own)
    before = _search(store, "tenant-a")
    # Another tenant fills the table with the query's words, in far more memories.
    _fill(
        store,
        "tenant-b",
        [f"tea garden brew note {i} for alice in the garden with tea" for i in range(3_000)],
    )
    with store.engine.begin() as connection:
        connection.execute(text("ANALYZE memories"))
    assert _search(store, "tenant-a") == before
    assert before, "the search finds tenant-a's memories"


def test_common_words_are_counted_per_scope() -> None:
    many = MIN_COMMON_DOCS * 3
    shares = combined_shares([(many, {"alic": many, "tea": 1})])
    assert distinctive_words(["alice", "tea"], shares) == ["tea"]
    # The same word is rare in a scope whose memories seldom hold it.
    rare = combined_shares([(10 * many, {"alic": MIN_COMMON_DOCS - 1})])
    assert distinctive_words(["alice", "tea"], rare) == ["alice", "tea"]


def test_small_scopes_have_no_common_words() -> None:
    """In a scope of a few memories every word is in a large share, yet none is dropped."""
    shares = combined_shares([(5, {"alic": 5, "tea": 3})])
    assert shares == {}


def test_a_query_about_nothing_stored_finds_nothing(store: KiokuStore) -> None:
    """The relevance floor: no top k of unrelated memories."""
    from kioku._tools.search import search_long_term_memory
    from tests.helpers import create_memory, make_world

    world = make_world(store)
    for content in (
        "Alice prefers short answers",
        "Alice drinks oolong tea in the afternoon",
        "Bob is learning the cello",
    ):
        create_memory(world, {"memory_content": content, "memory_scope": "server_wide"})
    found, _ = search_long_term_memory(
        store, world.context(), {"query": "zebra quantum chromodynamics"}
    )
    assert found["status"] == "no_memories_found", found
    found, _ = search_long_term_memory(
        store, world.context(), {"query": "what tea does Alice drink"}
    )
    assert found["status"] == "memories_found"
    assert "oolong" in found["memories"][0]
    store.settings = store.settings.model_copy(update={"relevance_similarity": -1.0})
    found, _ = search_long_term_memory(
        store, world.context(), {"query": "zebra quantum chromodynamics"}
    )
    assert found["status"] == "memories_found"  # the floor turned off


def test_a_memory_not_embedded_yet_still_counts_by_its_words(store: KiokuStore) -> None:
    """Its meaning cannot be compared, so a text match lifts the floor (embedder outage)."""
    from kioku._tools.search import search_long_term_memory
    from tests.helpers import create_memory, make_world

    world = make_world(store)
    for content in ("The printer on floor two jams daily", "Lunch is served at noon"):
        create_memory(world, {"memory_content": content, "memory_scope": "server_wide"})
    wifi = create_memory(
        world,
        {
            "memory_content": "The office wifi password is kept by Priya in finance",
            "memory_scope": "server_wide",
        },
    )
    with store.engine.begin() as connection:
        connection.execute(
            text("UPDATE memories SET embedding = NULL, needs_embedding = true WHERE id = :id"),
            {"id": wifi},
        )
    found, _ = search_long_term_memory(
        store,
        world.context(),
        {"query": "who should I ask about getting onto the wifi network at the office?"},
    )
    assert found["status"] == "memories_found", found
    assert any(line.startswith(f"ID:{wifi} ") for line in found["memories"])


def test_combined_word_shares_are_kept_until_a_scope_is_counted_again(store: KiokuStore) -> None:
    _fill(store, "tenant-c", [f"Alice keeps note {i} about the shed" for i in range(40)])
    ticks = [0.0]
    shares = TermShares(ttl_seconds=60, clock=lambda: ticks[0])
    both = Visibility("tenant-c", LINEAGE, ("nobody",))
    with store.sessions() as session:
        first = shares.get(session, both)
        assert shares.get(session, both) is first  # combined once while the counts hold
        assert first["shed"] == 1.0 and "alic" in first
        with store.transaction() as write:
            write.execute(
                insert(Memory),
                [
                    {
                        "scope": "server",
                        "server_id": "tenant-c",
                        "persona_lineage_id": LINEAGE,
                        "content": f"a lamp {i}",
                        "created_at": NOW,
                        "updated_at": NOW,
                    }
                    for i in range(40)
                ],
            )
        assert shares.get(session, both) is first  # still within the counts' lifetime
        ticks[0] = 61.0
        recounted = shares.get(session, both)
    assert recounted is not first and recounted["shed"] == 0.5
