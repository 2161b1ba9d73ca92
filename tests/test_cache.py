"""Cached memory sets are invalidated after every committed write (SPEC §2)."""

from __future__ import annotations

from typing import Any

import pytest

from kioku import KiokuStore, create_long_term_memory_tool, update_long_term_memory_tool
from kioku._context_build.build import ContextBuilder
from kioku._context_build.render import Names
from kioku._domain.records import MemoryRecord
from kioku._domain.scopes import PersonalScope, ServerScope
from kioku._memory.repository import MemoryRepository
from tests.helpers import make_world, run_tool


def test_callers_cannot_change_a_cached_window(store: KiokuStore) -> None:
    """``memories()`` gives a new list; the cached window itself holds a tuple."""
    world = make_world(store)
    server = ServerScope("srv-a", world.persona.lineage_id)
    run_tool(
        create_long_term_memory_tool(store),
        {"memory_content": "a", "memory_scope": "server_wide"},
        world.context(),
    )
    store.memories(server).clear()
    assert [m.content for m in store.memories(server)] == ["a"]
    assert isinstance(store.memory_window(server).records, tuple)


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


def _reloads(store: KiokuStore, monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Scopes whose window is read from the database from now on."""
    loaded: list[object] = []
    window = MemoryRepository.window

    def counting(self: MemoryRepository, scope: ServerScope | PersonalScope, limit: int) -> Any:
        loaded.append(scope)
        return window(self, scope, limit)

    monkeypatch.setattr(MemoryRepository, "window", counting)
    return loaded


def test_own_update_is_applied_to_the_cached_window(
    store: KiokuStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An update this process committed changes its cached window in place: no reload."""
    world = make_world(store)
    server = ServerScope("srv-a", world.persona.lineage_id)
    create = create_long_term_memory_tool(store)
    ids = [
        run_tool(
            create, {"memory_content": t, "memory_scope": "server_wide"}, world.context()
        ).result["memory_id"]
        for t in ("a", "b")
    ]
    before = store.memories(server)
    loaded = _reloads(store, monkeypatch)
    run_tool(
        update_long_term_memory_tool(store),
        {"memory_id": ids[0], "memory_content": "a2"},
        world.context(),
    )
    after = store.memories(server)
    assert loaded == []
    assert [m.content for m in after] == ["b", "a2"]
    assert [m.created_at for m in after] == [m.created_at for m in before]
    with store.sessions() as session:  # the same as a reload reads
        assert MemoryRepository(session).window(server, 200)[0] == after


def test_a_write_in_between_still_reloads(
    store: KiokuStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A change another process committed before ours makes the patched window a reload."""
    world = make_world(store)
    server = ServerScope("srv-a", world.persona.lineage_id)
    create = create_long_term_memory_tool(store)
    first = run_tool(
        create, {"memory_content": "a", "memory_scope": "server_wide"}, world.context()
    ).result["memory_id"]
    store.memories(server)
    other = KiokuStore(store.engine, settings=store.settings, embedder=store.embedder)
    try:  # another process: its own cache, the same database
        run_tool(
            create_long_term_memory_tool(other),
            {"memory_content": "b", "memory_scope": "server_wide"},
            world.context(),
        )
    finally:
        other.close()
    run_tool(
        update_long_term_memory_tool(store),
        {"memory_id": first, "memory_content": "a2"},
        world.context(),
    )
    loaded = _reloads(store, monkeypatch)
    assert sorted(m.content for m in store.memories(server)) == ["a2", "b"]
    assert loaded == [server]


def test_a_reused_builder_renders_each_unchanged_window_once(
    store: KiokuStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lines rendered from a cached window are reused while the window is, and follow
    every write (an update through this store; a new memory) on the next build."""
    world = make_world(store)
    create = create_long_term_memory_tool(store)
    server_id = run_tool(
        create, {"memory_content": "tea on Fridays", "memory_scope": "server_wide"}, world.context()
    ).result["memory_id"]
    personal = {"memory_scope": "target_user", "target_user": "Alice"}
    alice_id = run_tool(
        create, {"memory_content": "Alice likes jasmine", **personal}, world.context()
    ).result["memory_id"]
    builder = ContextBuilder(store)
    rendered: list[str] = []
    memory_line = Names.memory_line

    def counted(self: Names, memory: MemoryRecord, *args: Any) -> tuple[str, int]:
        rendered.append(memory.content)
        return memory_line(self, memory, *args)

    monkeypatch.setattr(Names, "memory_line", counted)

    def shown() -> str:
        return "\n".join(item.text for item in builder.build(world.context(), []).items)

    assert "tea on Fridays" in shown() and "Alice likes jasmine" in shown()
    rendered.clear()
    shown()
    assert rendered == []  # nothing changed: every line reused
    update = update_long_term_memory_tool(store)
    changed = {
        "memory_id": alice_id,
        "memory_content": "Alice likes oolong",
        "target_user": "Alice",
    }
    outcome = run_tool(update, changed, world.context()).result
    assert outcome["status"] == "memory_updated_successfully", outcome
    text = shown()
    assert "Alice likes oolong" in text and "jasmine" not in text and "tea on Fridays" in text
    assert "tea on Fridays" not in rendered  # the server's window was not rendered again
    changed = {"memory_id": server_id, "memory_content": "tea on Mondays"}
    assert run_tool(update, changed, world.context()).result["status"].endswith("successfully")
    added = run_tool(create, {"memory_content": "Alice hikes", **personal}, world.context())
    assert added.result["status"] == "memory_saved_successfully"
    text = shown()
    assert "tea on Mondays" in text and "Fridays" not in text and "Alice hikes" in text
