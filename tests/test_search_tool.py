"""search_long_term_memory: scope, hybrid ranking, statuses, artifacts, batched access counts."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import replace
from typing import Any

import psycopg
import pytest
from sqlalchemy import func, select, text

from kioku import KiokuStore, PrivacyLevel, create_long_term_memory_tool
from kioku._db.models import Memory, MemoryAccess
from kioku._tools.invoke import run_tool_call
from kioku._tools.search import search_long_term_memory_tool
from tests.helpers import World, make_world, run_tool


@pytest.fixture
def world(store: KiokuStore) -> World:
    world = make_world(store)
    create = create_long_term_memory_tool(store)
    for args in (
        {"memory_content": "{bot} serves jasmine tea on Fridays", "memory_scope": "server_wide"},
        {"memory_content": "The shop closes at nine", "memory_scope": "server_wide"},
        {
            "memory_content": "{user} is allergic to peanuts",
            "memory_scope": "target_user",
            "target_user": "Alice",
        },
        {
            "memory_content": "{user} collects teapots",
            "memory_scope": "target_user",
            "target_user": "Bob",
        },
    ):
        assert (
            run_tool(create, args, world.context()).result["status"] == "memory_saved_successfully"
        )
    # Memories this turn must never see:
    run_tool(
        create,
        {"memory_content": "jasmine secret of server B", "memory_scope": "server_wide"},
        world.context(server_id="srv-b", persona=world.other_persona),
    )
    with store.transaction() as session:
        session.add(
            Memory(
                scope="personal",
                user_id="u-carol",
                persona_lineage_id=world.persona.lineage_id,
                content="Carol's jasmine allergy",
            )
        )
    return world


def search(world: World, args: dict[str, Any], **ctx: Any) -> tuple[dict[str, Any], Any]:
    outcome = run_tool_call(
        [search_long_term_memory_tool(world.store)],
        "search_long_term_memory",
        args,
        world.context(**ctx),
    )
    return json.loads(str(outcome.message.content)), outcome.message.artifact


def test_finds_the_relevant_memory_first(world: World) -> None:
    payload, artifact = search(world, {"query": "which tea does Kioku serve?"})
    assert payload["status"] == "memories_found"
    assert payload["memories"][0].endswith("Kioku serves jasmine tea on Fridays")
    assert payload["memories"][0].startswith("ID:")
    assert artifact[0]["memory_type"] == "semantic" and artifact[0]["scope"] == "server"
    assert {"relevance", "score", "vector_rank", "text_rank", "created_at"} <= set(artifact[0])


def test_personal_memories_render_with_the_owner_and_stay_in_scope(world: World) -> None:
    payload, artifact = search(world, {"query": "jasmine allergy peanuts", "limit": 20})
    texts = " | ".join(payload["memories"])
    assert "Alice is allergic to peanuts" in texts
    assert "server B" not in texts and "Carol" not in texts
    assert all(a["scope"] == "server" or a["user_id"] in ("u-alice", "u-bob") for a in artifact)


def test_private_people_and_disabled_personal_memories_are_excluded(world: World) -> None:
    shy = replace(world.alice, privacy=PrivacyLevel.PARTIAL)
    _, artifact = search(
        world, {"query": "peanuts", "limit": 20}, user=world.bob, participants=(shy, world.bob)
    )
    assert "u-alice" not in {a["user_id"] for a in artifact}
    with world.store.accounts() as accounts:
        accounts.upsert_server("srv-a", personal_memories_enabled=False)
    _, artifact = search(world, {"query": "teapots or jasmine tea", "limit": 20})
    assert {a["scope"] for a in artifact} == {"server"}


def test_memory_type_filter(world: World) -> None:
    payload, _ = search(world, {"query": "tea", "memory_type": "procedural"})
    assert payload["status"] == "no_memories_found"


@pytest.mark.parametrize(
    "args",
    [
        {},
        {"query": ""},
        {"query": 3},
        {"query": "x", "limit": 0},
        {"query": "x", "limit": 99},
        {"query": "x", "limit": True},
        {"query": "x", "memory_type": "dreams"},
        {"query": "x", "k": 1},
        {"query": "x" * 1001},
    ],
)
def test_invalid_args(world: World, args: dict[str, Any]) -> None:
    payload, artifact = search(world, args)
    assert payload["status"] == "search_failed_invalid_args" and payload["reason"]
    assert artifact == []


def test_null_optional_arguments_mean_omitted(world: World) -> None:
    """Models send null for optional arguments: each means its default, limit included."""
    nulls = {"memory_type": None, "min_importance": None, "limit": None, "since": None}
    payload, _ = search(world, {"query": "jasmine tea", **nulls, "until": None})
    assert payload["status"] == "memories_found", payload


def test_query_syntax_cannot_break_the_search(world: World) -> None:
    for query in ["tea & | ! ( ) :*", "'; DROP TABLE memories; --", "🍵🍵", "___"]:
        payload, _ = search(world, {"query": query})
        assert payload["status"] in ("memories_found", "no_memories_found")


def test_access_counts_are_batched(world: World) -> None:
    world.store.access.flush_every = 1000
    for _ in range(3):
        search(world, {"query": "jasmine tea"})
    with world.store.sessions() as session:
        assert (
            session.scalar(
                select(func.count())
                .select_from(MemoryAccess)
                .join(Memory, Memory.id == MemoryAccess.memory_id)
                .where(Memory.content.like("%serves jasmine%"))
            )
            == 0
        )
    assert world.store.access.pending >= 3
    world.store.access.flush()
    with world.store.sessions() as session:
        row = session.execute(
            select(MemoryAccess.access_count, MemoryAccess.last_accessed)
            .join(Memory, Memory.id == MemoryAccess.memory_id)
            .where(Memory.content.like("%serves jasmine%"))
        ).one()
    assert row.access_count == 3 and row.last_accessed is not None


def test_access_counts_are_written_later_by_a_timer(world: World) -> None:
    world.store.access.interval = 0.05
    search(world, {"query": "jasmine tea"})
    deadline = time.monotonic() + 60
    while world.store.access.pending and time.monotonic() < deadline:
        time.sleep(0.02)
    assert world.store.access.pending == 0
    with world.store.sessions() as session:
        counts = session.scalars(
            select(MemoryAccess.access_count).where(MemoryAccess.access_count > 0)
        )
        assert list(counts)


def test_searches_are_prepared_only_where_the_connection_may_prepare(world: World) -> None:
    """Behind a pooler in transaction mode a prepared statement would reach another
    client's session (tests/test_pooler.py); on a direct connection a search repeated
    runs prepared (tests/test_prepared_statements.py says which connections are)."""
    for _ in range(8):  # psycopg prepares a statement from its sixth run
        assert search(world, {"query": "jasmine tea"})[0]["status"] == "memories_found"
    with world.store.reads() as session:  # the same pooled connection (one thread, LIFO)
        prepared = session.scalar(text("SELECT count(*) FROM pg_prepared_statements"))
        driver = session.connection().connection.driver_connection
    assert isinstance(driver, psycopg.Connection)
    assert (prepared > 0) == (driver.prepare_threshold is not None)


def test_a_full_batch_is_written_by_the_timer_thread_not_the_searcher(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search that fills the batch must not pay for writing it."""
    recorder = world.store.access
    recorder.flush_every, recorder.interval = 2, 3600.0
    searchers: list[threading.Thread] = []
    writers: list[threading.Thread] = []
    real_record, real_flush = recorder.record, recorder.flush

    def record(memory_ids: Any) -> None:
        searchers.append(threading.current_thread())
        real_record(memory_ids)

    def flush() -> None:
        writers.append(threading.current_thread())
        real_flush()

    monkeypatch.setattr(recorder, "record", record)
    monkeypatch.setattr(recorder, "flush", flush)
    assert search(world, {"query": "jasmine tea"})[0]["status"] == "memories_found"
    deadline = time.monotonic() + 60
    while recorder.pending and time.monotonic() < deadline:
        time.sleep(0.02)
    assert recorder.pending == 0
    assert searchers and writers and not set(searchers) & set(writers)
