"""Memories never cross servers, lineages or owners (SPEC §2, §4)."""

from __future__ import annotations

from typing import Any

import pytest

from kioku import (
    KiokuStore,
    Participant,
    update_long_term_memory_tool,
)
from kioku._context import Persona
from tests.helpers import World, create_memory, make_world, memory_row, table_counts, update_memory


@pytest.fixture(params=["sync", "async"])
def world(store: KiokuStore, request: pytest.FixtureRequest) -> World:
    return make_world(store, runner=request.param)


create = create_memory


def update(world: World, args: dict[str, Any], **ctx: Any) -> str:
    return str(update_memory(world, args, **ctx)["status"])


@pytest.mark.parametrize("content", ["changed", ""])
def test_server_a_memory_is_untouchable_from_server_b(world: World, content: str) -> None:
    memory_id = create(world, {"memory_content": "secret of A", "memory_scope": "server_wide"})
    status = update(
        world,
        {"memory_id": memory_id, "memory_content": content},
        server_id="srv-b",
        server_name="Server B",
        persona=world.other_persona,
    )
    assert status == "memory_update_failed_not_found"
    # Same persona lineage used in server B still cannot reach A's memory.
    status = update(world, {"memory_id": memory_id, "memory_content": content}, server_id="srv-b")
    assert status == "memory_update_failed_not_found"
    row = memory_row(world.store, memory_id)
    assert row is not None and row.content == "secret of A"
    assert table_counts(world.store) == (1, 1)


@pytest.mark.parametrize("content", ["changed", ""])
def test_other_lineage_cannot_touch_memories(world: World, content: str) -> None:
    server_id = create(world, {"memory_content": "lineage one", "memory_scope": "server_wide"})
    personal_id = create(
        world, {"memory_content": "{user} x", "memory_scope": "target_user", "target_user": "Alice"}
    )
    stranger = Persona(persona_id=99, name="Stranger", lineage_id=world.other_persona.lineage_id)
    assert update(world, {"memory_id": server_id, "memory_content": content}, persona=stranger) == (
        "memory_update_failed_not_found"
    )
    assert (
        update(
            world,
            {"memory_id": personal_id, "memory_content": content, "target_user": "Alice"},
            persona=stranger,
        )
        == "memory_update_failed_not_found"
    )
    assert table_counts(world.store) == (2, 2)


@pytest.mark.parametrize("content", ["changed", ""])
def test_personal_memory_only_through_its_owner(world: World, content: str) -> None:
    memory_id = create(
        world,
        {
            "memory_content": "{user} is Alice's",
            "memory_scope": "target_user",
            "target_user": "Alice",
        },
    )
    assert update(
        world, {"memory_id": memory_id, "memory_content": content, "target_user": "Bob"}
    ) == ("memory_update_failed_not_found")
    # Nor through the server path.
    assert (
        update(world, {"memory_id": memory_id, "memory_content": content})
        == "memory_update_failed_not_found"
    )
    row = memory_row(world.store, memory_id)
    assert row is not None and row.content == "{user} is Alice's"


def test_not_found_hint_never_names_invisible_owners(world: World) -> None:
    memory_id = create(
        world, {"memory_content": "{user} x", "memory_scope": "target_user", "target_user": "Alice"}
    )
    outsider = Participant("u-zoe", "Zoe")
    result = world.run(
        update_long_term_memory_tool(world.store),
        {"memory_id": memory_id, "memory_content": "y"},
        world.context(user=outsider, participants=(outsider,)),
    ).result
    assert result["status"] == "memory_update_failed_not_found"
    assert "Alice" not in result["reason"]


def test_personal_memories_follow_the_user_across_servers(world: World) -> None:
    memory_id = create(
        world, {"memory_content": "{user} x", "memory_scope": "target_user", "target_user": "Alice"}
    )
    # In server B (same lineage), Alice can correct her personal memory.
    assert (
        update(
            world,
            {"memory_id": memory_id, "memory_content": "{user} y", "target_user": "Alice"},
            server_id="srv-b",
        )
        == "memory_updated_successfully"
    )
