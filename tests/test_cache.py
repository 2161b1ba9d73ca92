"""Cached memory sets are invalidated after every committed write (SPEC §2)."""

from __future__ import annotations

from tests.helpers import make_world, run_tool
from toolkit import KiokuStore, create_long_term_memory_tool, update_long_term_memory_tool
from toolkit.memory.repository import PersonalScope, ServerScope


def test_reads_see_writes_immediately(store: KiokuStore) -> None:
    world = make_world(store)
    server = ServerScope("srv-a", world.persona.lineage_id)
    personal = PersonalScope("u-alice", world.persona.lineage_id)
    assert store.memories(server) == [] and store.memories(personal) == []
    assert server in store.cache and personal in store.cache

    create = create_long_term_memory_tool(store)
    first = run_tool(
        create, {"memory_content": "a", "memory_scope": "server_wide"}, world.context()
    )
    assert server not in store.cache
    assert [m.content for m in store.memories(server)] == ["a"]

    run_tool(
        create,
        {"memory_content": "b", "memory_scope": "target_user", "target_user": "Alice"},
        world.context(),
    )
    assert personal not in store.cache
    assert [m.content for m in store.memories(personal)] == ["b"]

    run_tool(
        update_long_term_memory_tool(store),
        {"memory_id": first.result["memory_id"], "memory_content": "c"},
        world.context(),
    )
    assert [m.content for m in store.memories(server)] == ["c"]


def test_failed_write_keeps_cache(store: KiokuStore) -> None:
    world = make_world(store)
    server = ServerScope("srv-a", world.persona.lineage_id)
    store.memories(server)
    run_tool(
        update_long_term_memory_tool(store),
        {"memory_id": 12345, "memory_content": "c"},
        world.context(),
    )
    assert server in store.cache
