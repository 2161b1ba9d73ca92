"""A tool reaches only what the turn may see (issue #11, 2): personal memories of people
outside the conversation, of invisible people and global ones of either answer exactly
like a missing id, through the tools, MCP and search; nobody fills another's quota."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import text

from kioku import KiokuSettings, KiokuStore, Participant, create_long_term_memory_tool
from kioku._mcp_server import KiokuMcp, McpScope
from kioku._tools.search import search_long_term_memory
from tests.helpers import World, create_memory, make_world, memory_row, update_memory

SECRETS = ("ERIN-SECRET", "DAVE-SECRET", "ERIN-GLOBAL-SECRET", "CAROL-SECRET")


@pytest.fixture
def world(store: KiokuStore) -> World:
    return make_world(store)


def plant(world: World) -> dict[str, int]:
    """Memories of people out of this conversation's reach, planted directly."""
    lineage = world.persona.lineage_id
    rows = {
        "erin": ("u-erin", lineage, "ERIN-SECRET"),  # a member of srv-a, not in the conversation
        "dave": ("u-dave", lineage, "DAVE-SECRET"),  # in the conversation, FULL privacy
        "erin_global": ("u-erin", 0, "ERIN-GLOBAL-SECRET"),  # global (lineage 0)
        "carol": ("u-carol", lineage, "CAROL-SECRET"),  # in the conversation, PARTIAL
    }
    ids = {}
    with world.store.engine.begin() as connection:
        for name, (user, lineage_id, content) in rows.items():
            ids[name] = connection.execute(
                text(
                    "INSERT INTO memories (scope, user_id, persona_lineage_id, content) "
                    "VALUES ('personal', :u, :l, :c) RETURNING id"
                ),
                {"u": user, "l": lineage_id, "c": content},
            ).scalar_one()
    return ids


def missing_reason(world: World, **context: Any) -> dict[str, Any]:
    return update_memory(world, {"memory_id": 987_654, "memory_content": ""}, **context)


def same_as_missing(result: dict[str, Any], missing: dict[str, Any], memory_id: int) -> bool:
    expected = json.loads(json.dumps(missing).replace("987654", str(memory_id)))
    return result == expected


@pytest.mark.parametrize("content", ["", "{user} hacked"], ids=["delete", "update"])
def test_out_of_reach_personal_memories_look_missing(world: World, content: str) -> None:
    ids = plant(world)
    names = {"erin": "Erin", "dave": "Dave", "erin_global": "Erin", "carol": "Carol"}
    for key, memory_id in ids.items():
        for target in (None, names[key]):
            args: dict[str, Any] = {"memory_id": memory_id, "memory_content": content}
            missing = missing_reason(world)
            if target is not None:
                args["target_user"] = target
                missing = update_memory(world, {**args, "memory_id": 987_654})
            result = update_memory(world, args)
            assert same_as_missing(result, missing, memory_id), (key, target, result)
            assert not any(s in json.dumps(result) for s in SECRETS)
    assert world.notices == []  # nothing changed, nothing announced
    for memory_id in ids.values():
        row = memory_row(world.store, memory_id)
        assert row is not None and row.content in SECRETS


def test_the_triggering_user_may_delete_their_own_whatever_their_privacy(world: World) -> None:
    ids = plant(world)
    # Dave (FULL) triggers the turn: his own memory is his to delete, and its text is not
    # echoed (the turn does not show it).
    result = update_memory(
        world,
        {"memory_id": ids["dave"], "memory_content": "", "target_user": "Dave"},
        user=world.dave,
    )
    assert result["status"] == "memory_deleted_successfully"
    assert "DAVE-SECRET" not in json.dumps(result)
    assert all("DAVE-SECRET" not in notice.content for notice in world.notices)
    result = update_memory(
        world,
        {"memory_id": ids["carol"], "memory_content": "{user} likes tea", "target_user": "Carol"},
        user=world.carol,
    )
    assert result["status"] == "memory_update_failed_privacy_restricted"


def test_search_and_mcp_apply_the_same_reach(world: World, store: KiokuStore) -> None:
    ids = plant(world)
    visible = create_memory(
        world,
        {
            "memory_content": "{user} SECRET-OF-BOB",
            "memory_scope": "target_user",
            "target_user": "Bob",
        },
    )
    payload, artifact = search_long_term_memory(
        store, world.context(), {"query": "SECRET", "limit": 20}
    )
    found = json.dumps([payload, artifact])
    assert "SECRET-OF-BOB" in found and not any(s in found for s in SECRETS)
    mcp = KiokuMcp(
        store,
        McpScope(server_id="srv-a", user_id="u-alice", user_name="Alice", persona_name="Kioku"),
    )
    for memory_id in ids.values():
        got = mcp.call("get_memory", {"memory_id": memory_id})
        assert got["status"] == "memory_not_found"
        for args in ({}, {"target_user": "Erin"}):
            changed = mcp.call(
                "update_long_term_memory", {"memory_id": memory_id, "memory_content": "", **args}
            )
            assert changed["status"] in (
                "memory_update_failed_not_found",
                "memory_update_failed_user_not_found",
            )
            assert not any(s in json.dumps(changed) for s in SECRETS)
    # Bob is not in the MCP conversation either.
    assert mcp.call("get_memory", {"memory_id": visible})["status"] == "memory_not_found"


def test_nobody_fills_the_quota_of_someone_not_in_the_conversation(
    engine: Any, database_url: str
) -> None:
    store = KiokuStore(
        engine, settings=KiokuSettings(database_url=database_url, max_personal_memories=3)
    )
    try:
        world = make_world(store)
        for attempt in range(5):
            created = world.run(
                create_long_term_memory_tool(store),
                {
                    "memory_content": f"{{user}} fact {attempt}",
                    "memory_scope": "target_user",
                    "target_user": "Erin",
                },
                world.context(),
            ).result
            assert created["status"] == "memory_save_failed_user_not_found"
        erin = Participant("u-erin", "Erin")
        for attempt in range(3):
            create_memory(
                world,
                {
                    "memory_content": f"{{user}} own {attempt}",
                    "memory_scope": "target_user",
                    "target_user": "Erin",
                },
                user=erin,
                participants=(erin,),
            )
    finally:
        store.close()
        with engine.begin() as connection:
            connection.execute(
                text(
                    "TRUNCATE memory_history, memories, server_members, personas, users, "
                    "servers RESTART IDENTITY CASCADE"
                )
            )
