"""Every status of create_long_term_memory, called as ToolNode calls it (SPEC §3)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from sqlalchemy import text

from kioku import KiokuStore, Participant, PrivacyLevel, create_long_term_memory_tool
from kioku._context import Persona
from tests.helpers import World, make_world, memory_row, table_counts

pytestmark = pytest.mark.usefixtures("store")


@pytest.fixture(params=["sync", "async"])
def world(store: KiokuStore, request: pytest.FixtureRequest) -> World:
    return make_world(store, runner=request.param)


def create(world: World, args: dict[str, object], **context: object) -> dict[str, object]:
    tool = create_long_term_memory_tool(world.store)
    ctx = world.context(**context) if context.get("_none") is None else None
    return world.run(tool, args, ctx).result


def test_saved_server_wide(world: World) -> None:
    result = create(
        world, {"memory_content": "  {user} loves {bot}  ", "memory_scope": "server_wide"}
    )
    assert result["status"] == "memory_saved_successfully"
    assert result["memory_scope"] == "server_wide"
    assert result["content"] == "{user} loves {bot}"
    row = memory_row(world.store, int(result["memory_id"]))  # type: ignore[arg-type]
    assert row is not None
    assert (row.scope, row.server_id, row.persona_lineage_id) == (
        "server",
        "srv-a",
        world.persona.lineage_id,
    )
    assert row.created_by == "u-alice" and row.persona_id == world.persona.persona_id
    assert table_counts(world.store) == (1, 1)


def test_saved_personal_by_alias(world: World) -> None:
    result = create(
        world,
        {
            "memory_content": "{user} likes tea",
            "memory_scope": "target_user",
            "target_user": "@ALI",
        },
    )
    assert result["status"] == "memory_saved_successfully"
    assert result["target_user"] == "Alice"
    row = memory_row(world.store, int(result["memory_id"]))  # type: ignore[arg-type]
    assert row is not None and (row.scope, row.user_id) == ("personal", "u-alice")


def test_personal_memory_about_someone_not_in_the_conversation_is_refused(world: World) -> None:
    """Nobody can fill the quota of a person who is not in the conversation."""
    result = create(
        world,
        {"memory_content": "{user} plays go", "memory_scope": "target_user", "target_user": "erin"},
    )
    assert result["status"] == "memory_save_failed_user_not_found"
    assert "not taking part" in result["reason"]
    assert table_counts(world.store) == (0, 0)
    erin = Participant("u-erin", "Erin")
    result = create(
        world,
        {"memory_content": "{user} plays go", "memory_scope": "target_user", "target_user": "erin"},
        participants=(world.alice, erin),
    )
    assert result["status"] == "memory_saved_successfully"
    assert result["target_user"] == "Erin"


@pytest.mark.parametrize(
    "args",
    [
        {},
        {"memory_content": "x"},
        {"memory_content": 5, "memory_scope": "server_wide"},
        {"memory_content": "   ", "memory_scope": "server_wide"},
        {"memory_content": "x", "memory_scope": "channel"},
        {"memory_content": "x", "memory_scope": "target_user"},
        {"memory_content": "x", "memory_scope": "target_user", "target_user": "  "},
        {"memory_content": "x", "memory_scope": "target_user", "target_user": 42},
        {"memory_content": "x", "memory_scope": "server_wide", "embedding": [1, 2]},
    ],
)
def test_invalid_args(world: World, args: dict[str, object]) -> None:
    result = create(world, args)
    assert result["status"] == "memory_save_failed_invalid_args"
    assert result["reason"]
    assert table_counts(world.store) == (0, 0)


def test_disabled(store: KiokuStore) -> None:
    world = make_world(store, self_teaching=False)
    result = create(world, {"memory_content": "x", "memory_scope": "server_wide"})
    assert result["status"] == "memory_save_failed_disabled"
    assert table_counts(store) == (0, 0)


@pytest.mark.parametrize(
    "args",
    [
        {"memory_content": "x" * 5000, "memory_scope": "server_wide"},
        {"memory_content": "x", "memory_scope": "target_user", "target_user": "Zed"},
        {"memory_content": "x", "memory_scope": "target_user", "target_user": "Bob"},
    ],
    ids=["content-too-long", "user-not-found", "privacy"],
)
def test_disabled_wins_over_later_checks(store: KiokuStore, args: dict[str, object]) -> None:
    """SPEC §3 checks self-teaching second, even though a successful save reads it last."""
    world = make_world(store, self_teaching=False)
    bob = replace(world.bob, privacy=PrivacyLevel.FULL)
    result = create(world, args, participants=(world.alice, bob))
    assert result["status"] == "memory_save_failed_disabled"
    assert table_counts(store) == (0, 0)


def test_unknown_server_defaults_to_disabled(world: World) -> None:
    result = create(
        world, {"memory_content": "x", "memory_scope": "server_wide"}, server_id="new-srv"
    )
    assert result["status"] == "memory_save_failed_disabled"


def test_missing_context_is_internal_error(world: World) -> None:
    tool = create_long_term_memory_tool(world.store)
    result = world.run(tool, {"memory_content": "x", "memory_scope": "server_wide"}, None).result
    assert result["status"] == "memory_save_failed_internal_error"
    assert table_counts(world.store) == (0, 0)


@pytest.mark.parametrize(
    "lacking",
    [
        {"persona": Persona(1, "", 10000)},
        {"user": Participant("", "Alice")},
        {"channel_id": ""},
    ],
    ids=["persona", "user", "channel"],
)
def test_disabled_wins_over_an_incomplete_context(
    store: KiokuStore, lacking: dict[str, object]
) -> None:
    """SPEC §3: self-teaching off (step 2) is answered before a missing context (step 3)."""
    args = {"memory_content": "x", "memory_scope": "server_wide"}
    off = make_world(store, self_teaching=False)
    assert create(off, args, **lacking)["status"] == "memory_save_failed_disabled"
    with store.accounts() as accounts:
        accounts.upsert_server("srv-a", self_teaching_enabled=True)
    assert create(off, args, **lacking)["status"] == "memory_save_failed_internal_error"
    assert table_counts(store) == (0, 0)


def test_ambiguous_user(world: World) -> None:
    twin = Participant("u-bob-twin", "bob")
    result = create(
        world,
        {"memory_content": "x", "memory_scope": "target_user", "target_user": "Bob"},
        participants=(world.alice, world.bob, twin),
    )
    assert result["status"] == "memory_save_failed_ambiguous_user"
    assert sorted(result["candidates"]) == ["Bob", "bob"]  # type: ignore[arg-type]
    assert table_counts(world.store) == (0, 0)


def test_user_not_found(world: World) -> None:
    result = create(
        world, {"memory_content": "x", "memory_scope": "target_user", "target_user": "Zed"}
    )
    assert result["status"] == "memory_save_failed_user_not_found"
    assert table_counts(world.store) == (0, 0)


@pytest.mark.parametrize("name", ["self", "Kioku", "the-bot"])
def test_bot_falls_back_to_server_wide(world: World, name: str) -> None:
    bot = Participant("bot-1", "the-bot")
    result = create(
        world,
        {"memory_content": "{bot} is a teapot", "memory_scope": "target_user", "target_user": name},
        participants=(world.alice, bot),
    )
    assert result["status"] == "memory_saved_successfully"
    assert result["memory_scope"] == "server_wide"


@pytest.mark.parametrize("name", ["Self", "yourself", "Kioku"])
def test_a_person_called_like_the_bot_is_that_person(world: World, name: str) -> None:
    """Issue #39: a participant called "Self" (or the persona's name) wins over the bot,
    so a personal fact about them is never saved server-wide, visible to everyone."""
    person = Participant("u-self", name)
    result = create(
        world,
        {
            "memory_content": "{user}'s phone number is 555-0100",
            "memory_scope": "target_user",
            "target_user": name.lower(),
        },
        participants=(world.alice, person),
    )
    assert result["status"] == "memory_saved_successfully", result
    assert (result["memory_scope"], result["target_user"]) == ("target_user", name)
    row = memory_row(world.store, int(result["memory_id"]))  # type: ignore[arg-type]
    assert row is not None and (row.scope, row.user_id) == ("personal", "u-self")


def test_a_directory_member_called_self_is_never_the_bot(world: World) -> None:
    """A member called "Self" who is not in the conversation is not found, not the bot."""
    with world.store.accounts() as accounts:
        accounts.upsert_user("u-self", "Self")
        accounts.add_member("srv-a", "u-self")
    result = create(
        world,
        {
            "memory_content": "{user} likes tea",
            "memory_scope": "target_user",
            "target_user": "self",
        },
    )
    assert result["status"] == "memory_save_failed_user_not_found", result
    assert table_counts(world.store) == (0, 0)


def test_bridge_user_falls_back_with_name(world: World) -> None:
    result = create(
        world,
        {
            "memory_content": "{user} bridges in",
            "memory_scope": "target_user",
            "target_user": "matrix max",
        },
    )
    assert result["status"] == "memory_saved_successfully"
    assert result["memory_scope"] == "server_wide"
    assert result["content"] == "Matrix Max bridges in"
    # Whom it is about is recorded with it, so erasing Matrix Max removes it (issue #39).
    with world.store.sessions() as session:
        subjects = session.execute(text("SELECT * FROM memory_subjects")).all()
    assert [tuple(row) for row in subjects] == [(result["memory_id"], "u-bridge", "srv-a")]


@pytest.mark.parametrize("name", ["Carol", "Dave"])
def test_privacy_restricted(world: World, name: str) -> None:
    result = create(
        world, {"memory_content": "x", "memory_scope": "target_user", "target_user": name}
    )
    assert result["status"] == "memory_save_failed_privacy_restricted"
    assert table_counts(world.store) == (0, 0)


def test_invalid_content_too_long(world: World) -> None:
    result = create(world, {"memory_content": "a" * 1001, "memory_scope": "server_wide"})
    assert result["status"] == "memory_save_failed_invalid_content"
    assert "1000" in str(result["reason"])
    assert table_counts(world.store) == (0, 0)
    assert create(world, {"memory_content": "a" * 1000, "memory_scope": "server_wide"})[
        "status"
    ] == ("memory_saved_successfully")


def test_invalid_content_empty_after_sanitising(world: World) -> None:
    result = create(world, {"memory_content": "\x00\x01", "memory_scope": "server_wide"})
    assert result["status"] == "memory_save_failed_invalid_content"


def test_placeholders_sanitised(world: World) -> None:
    result = create(
        world,
        {"memory_content": "{User} met {{bredrumb}} and {CHAR}", "memory_scope": "server_wide"},
    )
    assert result["content"] == "{user} met bredrumb and {char}"


def test_lineage_zero_is_internal_error(world: World) -> None:
    result = create(
        world,
        {"memory_content": "x", "memory_scope": "server_wide"},
        persona=replace(world.persona, lineage_id=0),
    )
    assert result["status"] == "memory_save_failed_internal_error"
    assert table_counts(world.store) == (0, 0)


def test_limit_exceeded(world: World) -> None:
    with world.store.accounts() as accounts:
        accounts.upsert_server("srv-a", max_server_memories=2)
    for i in range(2):
        assert create(world, {"memory_content": f"m{i}", "memory_scope": "server_wide"})[
            "status"
        ] == ("memory_saved_successfully")
    result = create(world, {"memory_content": "m3", "memory_scope": "server_wide"})
    assert result["status"] == "memory_save_failed_limit_exceeded"
    assert (result["limit"], result["count"]) == (2, 2)
    assert "delete" in str(result["reason"])
    assert table_counts(world.store) == (2, 2)


def test_personal_limit_counts_globals(world: World, store: KiokuStore) -> None:
    from kioku._db.models import Memory

    store.settings = store.settings.model_copy(update={"max_personal_memories": 2})
    with store.transaction() as session:
        session.add(
            Memory(scope="personal", user_id="u-alice", persona_lineage_id=0, content="global")
        )
    args = {"memory_content": "{user} x", "memory_scope": "target_user", "target_user": "Alice"}
    assert create(world, args)["status"] == "memory_saved_successfully"
    another = {**args, "memory_content": "{user} y"}
    assert create(world, another)["status"] == "memory_save_failed_limit_exceeded"


def test_default_limit_from_settings(world: World) -> None:
    world.store.settings = world.store.settings.model_copy(update={"max_server_memories": 1})
    assert create(world, {"memory_content": "a", "memory_scope": "server_wide"})["status"] == (
        "memory_saved_successfully"
    )
    assert create(world, {"memory_content": "b", "memory_scope": "server_wide"})["status"] == (
        "memory_save_failed_limit_exceeded"
    )


def test_dm_memories_use_a_per_dm_key(world: World) -> None:
    result = create(
        world,
        {"memory_content": "{user} whispers", "memory_scope": "server_wide"},
        server_id=None,
        server_name=None,
        channel_id="dm-42",
        participants=(world.alice,),
    )
    assert result["status"] == "memory_saved_successfully"
    row = memory_row(world.store, int(result["memory_id"]))  # type: ignore[arg-type]
    assert row is not None and row.server_id == "dm:dm-42"


def test_ids_are_one_global_space(world: World) -> None:
    a = create(world, {"memory_content": "s", "memory_scope": "server_wide"})
    b = create(
        world, {"memory_content": "p", "memory_scope": "target_user", "target_user": "Alice"}
    )
    assert int(b["memory_id"]) == int(a["memory_id"]) + 1  # type: ignore[arg-type]


def test_new_persona_lineages_start_at_10000(world: World) -> None:
    assert world.persona.lineage_id >= 10000
    with world.store.accounts() as accounts:
        again = accounts.create_persona("srv-a", "Kioku v2", lineage_id=world.persona.lineage_id)
    assert again.lineage_id == world.persona.lineage_id
    assert isinstance(again, Persona)


def test_privacy_is_taken_from_the_conversation(world: World) -> None:
    shy = replace(world.alice, privacy=PrivacyLevel.PARTIAL)
    result = create(
        world,
        {"memory_content": "x", "memory_scope": "target_user", "target_user": "Alice"},
        participants=(shy, world.bob),
    )
    assert result["status"] == "memory_save_failed_privacy_restricted"


def test_directory_matches_names_after_nfkc_normalisation(world: World) -> None:
    with world.store.accounts() as accounts:
        accounts.upsert_user("u-wide", "Ｗｉｄｅ Ｗｉｌｌ", is_bridge=True)
        accounts.add_member("srv-a", "u-wide", nickname="ＷＷ")
    for name in ("wide will", "@ww"):
        result = create(
            world,
            {"memory_content": "{user} x", "memory_scope": "target_user", "target_user": name},
        )
        assert result["status"] == "memory_saved_successfully", result
        assert result["memory_scope"] == "server_wide"
        assert result["content"] == "Ｗｉｄｅ Ｗｉｌｌ x"
