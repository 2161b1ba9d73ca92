"""Every status of update_long_term_memory, called as ToolNode calls it (SPEC §4)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import psycopg
import pytest
from sqlalchemy import text

from bench.roundtrips import RoundTripProxy
from kioku import (
    KiokuSettings,
    KiokuStore,
    Participant,
    PrivacyLevel,
    update_long_term_memory_tool,
)
from kioku._db.engine import make_engine
from kioku._db.models import Memory
from kioku._memory.directory import UserDirectory
from kioku._memory.flow import undo_refused
from kioku._memory.repository import MemoryRepository
from kioku._memory.resolution import DirectoryMember
from tests.helpers import World, create_memory, make_world, memory_row, table_counts, update_memory


@pytest.fixture(params=["sync", "async"])
def world(store: KiokuStore, request: pytest.FixtureRequest) -> World:
    return make_world(store, runner=request.param)


create = create_memory
update = update_memory


def server_memory(world: World, text: str = "{bot} likes tea") -> int:
    return create(world, {"memory_content": text, "memory_scope": "server_wide"})


def personal_memory(world: World, owner: str = "Alice", text: str = "{user} likes tea") -> int:
    return create(
        world, {"memory_content": text, "memory_scope": "target_user", "target_user": owner}
    )


def assert_untouched(world: World, memory_id: int, content: str) -> None:
    row = memory_row(world.store, memory_id)
    assert row is not None and row.content == content
    assert [a for a, _, _ in history_actions(world, memory_id)] == ["create"]


def history_actions(world: World, memory_id: int) -> list[tuple[str, str | None, str | None]]:
    with world.store.sessions() as session:
        return [
            (h.action, h.old_content, h.new_content)
            for h in MemoryRepository(session).history(memory_id)
        ]


@pytest.mark.parametrize("given", [None, "str", "ID:N", "id #"])
def test_updated_server_memory(world: World, given: str | None) -> None:
    memory_id = server_memory(world)
    before = memory_row(world.store, memory_id)
    ids: dict[str | None, Any] = {
        None: memory_id,
        "str": str(memory_id),
        "ID:N": f"ID:{memory_id}",
        "id #": f"id #{memory_id}",
    }
    result = update(world, {"memory_id": ids[given], "memory_content": "{bot} likes coffee"})
    assert result["status"] == "memory_updated_successfully"
    after = memory_row(world.store, memory_id)
    assert after is not None and before is not None
    assert after.content == "{bot} likes coffee"
    assert after.created_at == before.created_at
    assert after.updated_at >= before.updated_at
    assert history_actions(world, memory_id)[-1] == (
        "update",
        "{bot} likes tea",
        "{bot} likes coffee",
    )
    assert world.notices[-1].kind == "updated"
    assert world.notices[-1].content == "Kioku likes coffee"


def test_deleted_server_memory(world: World) -> None:
    memory_id = server_memory(world)
    result = update(world, {"memory_id": memory_id, "memory_content": "   "})
    assert result["status"] == "memory_deleted_successfully"
    assert result["deleted_content"] == "{bot} likes tea"
    assert memory_row(world.store, memory_id) is None
    assert history_actions(world, memory_id)[-1] == ("delete", "{bot} likes tea", None)
    assert world.notices[-1].kind == "deleted"
    assert world.notices[-1].content == "Kioku likes tea"


def test_only_unstorable_characters_are_refused_not_a_delete(world: World) -> None:
    """Issue #12: a NUL is bad input, not a request to forget; only "" (or blanks) deletes."""
    memory_id = server_memory(world)
    for junk in ("\x00", "\ud800", "\x00\x07", "\x1f", "\x85", "\u2028"):
        result = update(world, {"memory_id": memory_id, "memory_content": junk})
        assert result["status"] == "memory_update_failed_invalid_content", result
        assert "memory_content" in result["reason"]
    assert memory_row(world.store, memory_id) is not None
    assert update(world, {"memory_id": memory_id, "memory_content": "  "})["status"] == (
        "memory_deleted_successfully"
    )


def test_updated_and_deleted_personal(world: World) -> None:
    memory_id = personal_memory(world)
    result = update(
        world,
        {"memory_id": memory_id, "memory_content": "{user} likes oolong", "target_user": "alice"},
    )
    assert result["status"] == "memory_updated_successfully"
    assert world.notices[-1].content == "Alice likes oolong"
    result = update(world, {"memory_id": memory_id, "memory_content": "", "target_user": "Alice"})
    assert result["status"] == "memory_deleted_successfully"


@pytest.mark.parametrize(
    "args",
    [
        {},
        {"memory_id": 1},
        {"memory_id": 0, "memory_content": "x"},
        {"memory_id": -3, "memory_content": "x"},
        {"memory_id": 1.5, "memory_content": "x"},
        {"memory_id": True, "memory_content": "x"},
        {"memory_id": 2**53, "memory_content": "x"},
        {"memory_id": "seven", "memory_content": "x"},
        {"memory_id": "1; DROP TABLE memories", "memory_content": "x"},
        {"memory_id": 1, "memory_content": None},
        {"memory_id": 1, "memory_content": ["x"]},
        {"memory_id": 1, "memory_content": "x", "target_user": 3},
        {"memory_id": 1, "memory_content": "x", "scope": "server"},
    ],
)
def test_invalid_args(world: World, args: dict[str, Any]) -> None:
    memory_id = server_memory(world)
    assert memory_id == 1
    result = update(world, args)
    assert result["status"] == "memory_update_failed_invalid_args"
    assert result["reason"]
    assert table_counts(world.store) == (1, 1)


def test_disabled(store: KiokuStore) -> None:
    world = make_world(store)
    memory_id = server_memory(world)
    with store.accounts() as accounts:
        accounts.upsert_server("srv-a", self_teaching_enabled=False)
    assert update(world, {"memory_id": memory_id, "memory_content": "y"})["status"] == (
        "memory_update_failed_disabled"
    )
    assert table_counts(store) == (1, 1)


def test_missing_context(world: World) -> None:
    result = world.run(
        update_long_term_memory_tool(world.store), {"memory_id": 1, "memory_content": "x"}, None
    )
    assert result.result["status"] == "memory_update_failed_internal_error"
    assert table_counts(world.store) == (0, 0)


def test_disabled_wins_over_an_incomplete_context(store: KiokuStore) -> None:
    """SPEC §4 step 1: self-teaching off is answered before a missing context."""
    world = make_world(store)
    memory_id = server_memory(world)
    with store.accounts() as accounts:
        accounts.upsert_server("srv-a", self_teaching_enabled=False)
    nameless = replace(world.persona, name="")
    for content in ("y", ""):
        result = update(
            world, {"memory_id": memory_id, "memory_content": content}, persona=nameless
        )
        assert result["status"] == "memory_update_failed_disabled", result
    assert table_counts(store) == (1, 1)


def test_invalid_content(world: World) -> None:
    memory_id = server_memory(world)
    result = update(world, {"memory_id": memory_id, "memory_content": "b" * 1001})
    assert result["status"] == "memory_update_failed_invalid_content"
    assert table_counts(world.store) == (1, 1)


def test_ambiguous_user(world: World) -> None:
    memory_id = personal_memory(world)
    twin = Participant("u-alice-2", "Alice")
    result = update(
        world,
        {"memory_id": memory_id, "memory_content": "x", "target_user": "Alice"},
        participants=(world.alice, twin, world.bob),
    )
    # Two people display as "Alice": the label match is not unique, so it is ambiguous.
    assert result["status"] == "memory_update_failed_ambiguous_user"
    assert_untouched(world, memory_id, "{user} likes tea")


def test_user_not_found(world: World) -> None:
    memory_id = personal_memory(world)
    result = update(world, {"memory_id": memory_id, "memory_content": "x", "target_user": "Nobody"})
    assert result["status"] == "memory_update_failed_user_not_found"
    assert_untouched(world, memory_id, "{user} likes tea")


def test_bridge_user_is_invalid_scope(world: World) -> None:
    memory_id = server_memory(world)
    result = update(
        world, {"memory_id": memory_id, "memory_content": "x", "target_user": "Matrix Max"}
    )
    assert result["status"] == "memory_update_failed_invalid_scope"
    assert_untouched(world, memory_id, "{bot} likes tea")


def test_bot_is_invalid_target(world: World) -> None:
    memory_id = server_memory(world)
    result = update(world, {"memory_id": memory_id, "memory_content": "x", "target_user": "self"})
    assert result["status"] == "memory_update_failed_invalid_target"
    assert_untouched(world, memory_id, "{bot} likes tea")


def test_a_participant_called_self_is_that_person_not_the_bot(world: World) -> None:
    """Issue #39: the literal ``self`` is the bot only when nobody is called that."""
    person = Participant("u-self", "Self")
    memory_id = create_memory(
        world,
        {
            "memory_content": "{user} likes tea",
            "memory_scope": "target_user",
            "target_user": "Self",
        },
        participants=(world.alice, person),
    )
    result = update(
        world,
        {"memory_id": memory_id, "memory_content": "{user} likes milk", "target_user": "self"},
        participants=(world.alice, person),
    )
    assert result["status"] == "memory_updated_successfully", result
    assert result["memory_scope"] == "target_user"


class StaleDirectory:
    """An application directory whose search index still lists a member who left."""

    def find_members(self, server_id: str, name_key: str) -> list[DirectoryMember]:
        return [DirectoryMember("u-alice", "Alice", nickname="Old Alice")]

    def is_member(self, server_id: str, user_id: str) -> bool:
        return False


def test_owner_not_member_is_not_found(world: World, store: KiokuStore) -> None:
    memory_id = personal_memory(world)
    app_store = KiokuStore(store.engine, settings=store.settings, directory=StaleDirectory())
    assert isinstance(app_store.directory, UserDirectory)
    result = world.run(
        update_long_term_memory_tool(app_store),
        {"memory_id": memory_id, "memory_content": "x", "target_user": "Old Alice"},
        world.context(participants=(world.bob,), user=world.bob),
    ).result
    assert result == {
        "status": "memory_update_failed_not_found",
        "reason": f"ID:{memory_id} is not a memory you can change here. "
        "Check the ID:N in your context.",
    }
    assert table_counts(store) == (1, 1)


def test_dm_reaches_only_the_conversations_participants(world: World) -> None:
    memory_id = personal_memory(world, owner="Bob")
    dm = {"server_id": None, "channel_id": "dm-1"}
    result = update(
        world,
        {"memory_id": memory_id, "memory_content": "", "target_user": "Bob"},
        participants=(world.alice,),
        **dm,
    )
    assert result["status"] in (
        "memory_update_failed_not_found",
        "memory_update_failed_user_not_found",
    )
    assert "likes tea" not in json.dumps(result)
    assert table_counts(world.store)[0] == 1
    result = update(
        world,
        {"memory_id": memory_id, "memory_content": "{user} likes coffee", "target_user": "Bob"},
        participants=(world.alice, world.bob),
        **dm,
    )
    assert result["status"] == "memory_updated_successfully"


def test_member_who_left_the_conversation_is_out_of_reach(world: World) -> None:
    erin = Participant("u-erin", "Erin")
    with_erin = (world.alice, world.bob, erin)
    memory_id = create(
        world,
        {"memory_content": "{user} plays go", "memory_scope": "target_user", "target_user": "Erin"},
        participants=with_erin,
    )
    with world.store.accounts() as accounts:
        accounts.add_member("srv-a", "u-erin", nickname="erin-the-great")
    changed = update(
        world,
        {"memory_id": memory_id, "memory_content": "{user} plays chess", "target_user": "Erin"},
        participants=with_erin,
    )
    assert changed["status"] == "memory_updated_successfully"
    missing = update(world, {"memory_id": 999_999, "memory_content": "", "target_user": "Erin"})
    for target in ("Erin", "erin-the-great"):
        result = update(
            world, {"memory_id": memory_id, "memory_content": "", "target_user": target}
        )
        assert result["status"] == "memory_update_failed_not_found"
        assert result["reason"] == missing["reason"].replace("999999", str(memory_id))
        assert "chess" not in json.dumps(result)
    with world.store.accounts() as accounts:
        accounts.remove_member("srv-a", "u-erin")
    # Erin is no longer resolvable through the server directory at all.
    result = update(world, {"memory_id": memory_id, "memory_content": "", "target_user": "Erin"})
    assert result["status"] == "memory_update_failed_user_not_found"
    assert memory_row(world.store, memory_id) is not None


def test_privacy_restricted_update_but_delete_allowed(world: World) -> None:
    memory_id = personal_memory(world)
    shy = replace(world.alice, privacy=PrivacyLevel.PARTIAL)
    participants = (shy, world.bob)
    result = update(
        world,
        {"memory_id": memory_id, "memory_content": "x", "target_user": "Alice"},
        participants=participants,
    )
    assert result["status"] == "memory_update_failed_privacy_restricted"
    assert_untouched(world, memory_id, "{user} likes tea")
    result = update(
        world,
        {"memory_id": memory_id, "memory_content": "", "target_user": "Alice"},
        participants=participants,
    )
    assert result["status"] == "memory_deleted_successfully"


def test_not_found(world: World) -> None:
    result = update(world, {"memory_id": 999, "memory_content": "x"})
    assert result["status"] == "memory_update_failed_not_found"
    assert table_counts(world.store) == (0, 0)


def test_not_found_hints_personal_owner(world: World) -> None:
    memory_id = personal_memory(world)
    result = update(world, {"memory_id": memory_id, "memory_content": "x"})
    assert result["status"] == "memory_update_failed_not_found"
    assert "personal memory of Alice" in result["reason"]
    assert 'target_user="Alice"' in result["reason"]


def test_not_found_hints_server_scope(world: World) -> None:
    memory_id = server_memory(world)
    result = update(world, {"memory_id": memory_id, "memory_content": "x", "target_user": "Alice"})
    assert result["status"] == "memory_update_failed_not_found"
    assert "server-wide" in result["reason"]


def test_global_personal_memory_is_updatable(world: World, store: KiokuStore) -> None:
    with store.transaction() as session:
        row = Memory(
            scope="personal", user_id="u-alice", persona_lineage_id=0, content="{user} is global"
        )
        session.add(row)
        session.flush()
        memory_id = row.id
    result = update(
        world,
        {
            "memory_id": memory_id,
            "memory_content": "{user} is still global",
            "target_user": "Alice",
        },
    )
    assert result["status"] == "memory_updated_successfully"
    updated = memory_row(store, memory_id)
    assert updated is not None and updated.persona_lineage_id == 0


def test_updates_and_refusals_prepare_nothing(store: KiokuStore) -> None:
    """Behind a pooler in transaction mode a prepared statement would reach another
    client's session: nothing is prepared, however often a statement runs."""
    world = make_world(store)  # sync: every call on the same pooled connection (LIFO)
    memory_id = server_memory(world)
    for turn in range(8):  # psycopg would prepare a statement from its sixth run
        result = update(world, {"memory_id": memory_id, "memory_content": f"fact {turn}"})
        assert result["status"] == "memory_updated_successfully", result
    refused = [
        update(world, {"memory_id": memory_id + 1000, "memory_content": "x"}),
        update(world, {"memory_id": "not a number", "memory_content": "x"}),
    ]
    assert [r["status"] for r in refused] == [
        "memory_update_failed_not_found",
        "memory_update_failed_invalid_args",
    ]
    with store.reads() as session:
        assert session.scalar(text("SELECT count(*) FROM pg_prepared_statements")) == 0
    assert update(world, {"memory_id": memory_id, "memory_content": "fact 9"})["status"] == (
        "memory_updated_successfully"
    )
    row = memory_row(store, memory_id)
    assert row is not None and row.content == "fact 9"


def test_a_refusal_whose_rollback_breaks_still_answers(store: KiokuStore) -> None:
    """A refused call's rollback that fails must not escape the flow, and the connection
    it leaves in doubt is not reused."""
    with store.sessions() as session:
        session.execute(text("SELECT 1"))  # a unit of work that wrote nothing
        fairy = session.connection().connection

        def broken() -> None:
            raise psycopg.OperationalError("server closed the connection unexpectedly")

        fairy.rollback = broken  # type: ignore[method-assign]
        undo_refused(session)
    with store.sessions() as session:
        assert session.scalar(text("SELECT 1")) == 1


def test_with_personal_memories_off_only_the_users_own_stay_changeable(store: KiokuStore) -> None:
    world = make_world(store)
    bobs, alices = personal_memory(world, "Bob"), personal_memory(world, "Alice")
    with store.accounts() as accounts:
        accounts.upsert_server("srv-a", personal_memories_enabled=False)
    change = {"memory_content": "{user} likes coffee"}
    refused = update(world, {"memory_id": bobs, **change, "target_user": "Bob"})
    assert refused["status"] == "memory_update_failed_not_found"
    assert refused["reason"] == update(world, {"memory_id": 999, **change, "target_user": "Bob"})[
        "reason"
    ].replace("999", str(bobs)), "out of reach reads like a missing id"
    assert_untouched(world, bobs, "{user} likes tea")
    own = update(world, {"memory_id": alices, **change, "target_user": "Alice"})
    assert own["status"] == "memory_updated_successfully", own


def test_a_disabled_server_wins_over_a_refusal_of_the_update_itself(store: KiokuStore) -> None:
    world = make_world(store)
    bobs = personal_memory(world, "Bob")
    with store.accounts() as accounts:
        accounts.upsert_server(
            "srv-a", self_teaching_enabled=False, personal_memories_enabled=False
        )
    for memory_id in (bobs, bobs + 1000):
        result = update(
            world, {"memory_id": memory_id, "memory_content": "x", "target_user": "Bob"}
        )
        assert result["status"] == "memory_update_failed_disabled", result
    assert_untouched(world, bobs, "{user} likes tea")


def test_an_update_is_one_round_trip(store: KiokuStore, database_url: str) -> None:
    """Settings, the scope check, the row lock and the update: one statement, no BEGIN or
    COMMIT (it is atomic on its own). ``store`` empties the tables afterwards."""
    proxy = RoundTripProxy(database_url)
    counted = KiokuStore(make_engine(proxy.url), settings=KiokuSettings(database_url=proxy.url))
    try:
        world = make_world(counted)
        memory_id = personal_memory(world, "Bob")
        args = {"memory_id": memory_id, "target_user": "Bob"}
        update(world, {**args, "memory_content": "{user} likes coffee"})  # the pool connects
        proxy.reset()
        result = update(world, {**args, "memory_content": "{user} likes cocoa"})
        assert result["status"] == "memory_updated_successfully", result
        assert proxy.reset() == 1
        assert [a for a, _, _ in history_actions(world, memory_id)] == [
            "create",
            "update",
            "update",
        ]
    finally:
        counted.close()
        proxy.close()
