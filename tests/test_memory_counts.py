"""``memory_counts`` (what the limit check reads) agrees with the memories it counts.

Whatever changes the table: the create tools, deletes through the update tool, bulk
inserts that bypass the tools, archiving, moving a memory, cascades and truncation.
"""

from __future__ import annotations

from sqlalchemy import delete, insert, text, update

from kioku import KiokuStore, create_long_term_memory_tool
from kioku._db.models import Memory, Server
from tests.helpers import World, create_memory, make_world, update_memory

COUNTED = "SELECT scope, owner_id, persona_lineage_id, active FROM memory_counts WHERE active <> 0"
ACTUAL = (
    "SELECT scope, COALESCE(server_id, user_id), persona_lineage_id, count(*) "
    "FROM memories WHERE status = 'active' GROUP BY 1, 2, 3"
)


def per_scope(store: KiokuStore, query: str) -> dict[tuple[str, str, int], int]:
    with store.sessions() as session:
        return {(a, b, c): n for a, b, c, n in session.execute(text(query)).all()}


def counted(store: KiokuStore) -> dict[tuple[str, str, int], int]:
    return per_scope(store, COUNTED)


def actual(store: KiokuStore) -> dict[tuple[str, str, int], int]:
    return per_scope(store, ACTUAL)


def test_counts_follow_every_kind_of_change(store: KiokuStore) -> None:
    world: World = make_world(store)
    lineage = world.persona.lineage_id
    first = create_memory(
        world, {"memory_content": "{user} likes tea", "memory_scope": "server_wide"}
    )
    create_memory(world, {"memory_content": "{user} hikes", "memory_scope": "server_wide"})
    create_memory(
        world,
        {"memory_content": "{user} sings", "memory_scope": "target_user", "target_user": "Bob"},
    )
    assert (
        counted(store)
        == actual(store)
        == {
            ("server", "srv-a", lineage): 2,
            ("personal", "u-bob", lineage): 1,
        }
    )

    update_memory(world, {"memory_id": first, "memory_content": ""})  # a delete
    with store.transaction() as session:
        session.execute(
            insert(Memory),
            [
                {"scope": "server", "server_id": "srv-b", "persona_lineage_id": 7, "content": c}
                for c in ("a", "b", "c")
            ],
        )
        session.execute(
            insert(Memory).values(
                scope="personal", user_id="u-bob", persona_lineage_id=0, content="global"
            )
        )
    assert counted(store) == actual(store)

    with store.transaction() as session:
        session.execute(
            update(Memory)
            .where(Memory.server_id == "srv-b", Memory.content == "a")
            .values(status="archived")
        )
        session.execute(
            update(Memory)
            .where(Memory.server_id == "srv-b", Memory.content == "b")
            .values(persona_lineage_id=8)
        )
        session.execute(update(Memory).values(importance=Memory.importance))
    assert counted(store) == actual(store)

    with store.transaction() as session:
        session.execute(delete(Server).where(Server.id == "srv-b"))  # cascades to its memories
    assert counted(store) == actual(store)

    with store.transaction() as session:
        session.execute(text("TRUNCATE memories CASCADE"))
    assert counted(store) == actual(store) == {}


def test_limit_counts_global_personal_memories(store: KiokuStore) -> None:
    """A user's global (lineage 0) memories count against every lineage's personal limit."""
    store.settings = store.settings.model_copy(update={"max_personal_memories": 2})
    world = make_world(store)
    with store.transaction() as session:
        session.execute(
            insert(Memory).values(
                scope="personal", user_id="u-bob", persona_lineage_id=0, content="global"
            )
        )
    bob = {"memory_content": "{user} sings", "memory_scope": "target_user", "target_user": "Bob"}
    create_memory(world, bob)
    dances = {**bob, "memory_content": "{user} dances"}
    result = world.run(create_long_term_memory_tool(store), dances, world.context()).result
    assert result["status"] == "memory_save_failed_limit_exceeded"
    assert (result["limit"], result["count"]) == (2, 2)
