"""Operators see what kioku remembers: list, show with history, search (plain records)."""

from __future__ import annotations

import json

from kioku import KiokuStore, PersonalScope, ServerScope, create_long_term_memory_tool
from kioku._context import server_key
from kioku._tools.ltm import update_long_term_memory_tool
from tests.helpers import World, make_world, run_tool


def _saved(world: World, content: str, scope: str, **target: str) -> int:
    create = create_long_term_memory_tool(world.store)
    args = {"memory_content": content, "memory_scope": scope, **target}
    result = run_tool(create, args, world.context()).result
    assert result["status"] == "memory_saved_successfully", result
    return int(result["memory_id"])


def test_list_show_and_search_return_plain_records(store: KiokuStore) -> None:
    world = make_world(store)
    tea = _saved(world, "{user} likes jasmine tea", "target_user", target_user="Alice")
    _saved(world, "{user} collects stamps", "target_user", target_user="Bob")
    shop = _saved(world, "The shop opens at nine", "server_wide")
    update = update_long_term_memory_tool(store)
    changed = {"memory_id": tea, "memory_content": "{user} likes green tea", "target_user": "Alice"}
    updated = run_tool(update, changed, world.context()).result
    assert updated["status"] == "memory_updated_successfully"

    alice = store.list_memories(user_id="u-alice")
    assert [m.content for m in alice] == ["{user} likes green tea"]
    assert [m.id for m in store.list_memories(server_id="srv-a")] == [shop]
    assert {m.user_id for m in store.list_memories()} >= {"u-alice", "u-bob"}

    detail = store.show_memory(tea)
    assert detail.memory is not None and detail.memory.content == "{user} likes green tea"
    assert [h.action for h in detail.history][:2] == ["create", "update"]
    json.dumps(detail.to_dict())  # JSON-ready, for `kioku memories show --json`

    lineage = world.persona.lineage_id
    found = store.search_memories(PersonalScope("u-alice", lineage), "tea")
    assert [m.id for m, _ in found] == [tea]
    shops = store.search_memories(ServerScope(server_key("srv-a"), lineage), "when does it open")
    assert shops and shops[0][0].id == shop


def test_a_deleted_memory_shows_its_history(store: KiokuStore) -> None:
    world = make_world(store)
    gone = _saved(world, "{user} is moving to Lyon", "target_user", target_user="Alice")
    update = update_long_term_memory_tool(store)
    deleted = {"memory_id": gone, "memory_content": "", "target_user": "Alice"}
    result = run_tool(update, deleted, world.context()).result
    assert result["status"] == "memory_deleted_successfully"
    detail = store.show_memory(gone)
    assert detail.memory is None
    assert [h.action for h in detail.history] == ["create", "delete"]
