"""The truth after a lost acknowledgement, and creates that happen once.

A loopback proxy (tests/lossy_proxy.py) lets the database commit and then drops its reply.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from sqlalchemy import func, select

from kioku import KiokuSettings, KiokuStore
from kioku._db.engine import make_engine
from kioku._db.models import Memory
from kioku._memory import flow
from kioku._tools.ltm import create_long_term_memory_tool, update_long_term_memory_tool
from tests.helpers import World, create_memory, make_world, run_tool
from tests.lossy_proxy import LossyProxy

FACT = {"memory_content": "Alice keeps bees on her roof.", "memory_scope": "server_wide"}


@pytest.fixture
def world(store: KiokuStore) -> World:
    return make_world(store)


@pytest.fixture(autouse=True)
def _quick_confirmation(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(flow, "CONFIRM_ATTEMPTS", (0.0, 0.0))


@pytest.fixture
def lossy(database_url: str) -> Iterator[Any]:
    made: list[tuple[LossyProxy, KiokuStore]] = []

    def through_proxy(trigger: Sequence[bytes], *, refuse_after_drop: bool = False) -> Any:
        proxy = LossyProxy(database_url, trigger, refuse_after_drop=refuse_after_drop)
        engine = make_engine(proxy.url)
        store = KiokuStore(engine, settings=KiokuSettings(database_url=proxy.url))
        made.append((proxy, store))
        return proxy, store

    yield through_proxy
    for proxy, store in made:
        store.close()
        proxy.close()


def _count(store: KiokuStore, content: str) -> int:
    with store.sessions() as session:
        return int(
            session.scalar(
                select(func.count()).select_from(Memory).where(Memory.content == content)
            )
            or 0
        )


def test_a_create_whose_reply_is_lost_answers_what_happened(world: World, lossy: Any) -> None:
    proxy, store = lossy([b"kioku_create_memory"])
    result = run_tool(create_long_term_memory_tool(store), FACT, world.context()).result
    assert proxy.dropped.is_set(), "the proxy should have swallowed the reply"
    assert result["status"] == "memory_saved_successfully", result
    assert "already_saved" not in result, "this call saved it"
    assert [notice.kind for notice in world.notices] == ["created"]
    assert _count(world.store, FACT["memory_content"]) == 1

    retry = run_tool(create_long_term_memory_tool(world.store), FACT, world.context()).result
    assert retry["status"] == "memory_saved_successfully"
    assert retry["already_saved"] is True
    assert retry["memory_id"] == result["memory_id"]
    assert _count(world.store, FACT["memory_content"]) == 1, "no duplicate after a retry"


def test_when_the_database_cannot_be_asked_the_outcome_is_unknown(world: World, lossy: Any) -> None:
    # The create runs in a transaction (under the scope's lock for the duplicate check):
    # its COMMIT is what may have happened unseen.
    proxy, store = lossy([b"COMMIT"], refuse_after_drop=True)
    result = run_tool(create_long_term_memory_tool(store), FACT, world.context()).result
    assert proxy.dropped.is_set()
    assert result["status"] == "memory_save_failed_db_error"
    assert "unknown" in result["reason"] and "Check" in result["reason"]
    assert "Nothing was changed" not in result["reason"]
    assert _count(world.store, FACT["memory_content"]) == 1  # it did happen


def test_a_delete_whose_commit_reply_is_lost_reports_the_delete(world: World, lossy: Any) -> None:
    memory_id = create_memory(world, FACT)
    proxy, store = lossy([b"kioku_delete_memory", b"COMMIT"])
    result = run_tool(
        update_long_term_memory_tool(store),
        {"memory_id": memory_id, "memory_content": ""},
        world.context(),
    ).result
    assert proxy.dropped.is_set()
    assert result["status"] == "memory_deleted_successfully", result
    assert _count(world.store, FACT["memory_content"]) == 0


def test_an_update_whose_reply_is_lost_reports_the_update(world: World, lossy: Any) -> None:
    # An update is one statement, committed on its own: its reply is what may be lost.
    memory_id = create_memory(world, FACT)
    proxy, store = lossy([b"kioku_update_memory"])
    new = "Alice keeps bees on her roof and in the garden."
    result = run_tool(
        update_long_term_memory_tool(store),
        {"memory_id": memory_id, "memory_content": new},
        world.context(),
    ).result
    assert proxy.dropped.is_set()
    assert result["status"] == "memory_updated_successfully", result
    assert _count(world.store, new) == 1


def test_the_same_content_twice_is_saved_once(world: World) -> None:
    tool = create_long_term_memory_tool(world.store)
    first = run_tool(tool, FACT, world.context()).result
    spaced = {**FACT, "memory_content": "  Alice keeps bees on her roof.\n "}
    second = run_tool(tool, spaced, world.context()).result
    assert second["status"] == "memory_saved_successfully"
    assert second["already_saved"] is True and second["memory_id"] == first["memory_id"]
    assert "already_saved" not in first
    assert _count(world.store, FACT["memory_content"]) == 1
    # Another scope is another memory.
    personal = {**FACT, "memory_scope": "target_user", "target_user": "Alice"}
    third = run_tool(tool, personal, world.context()).result
    assert third["memory_id"] != first["memory_id"] and "already_saved" not in third


def test_a_refused_update_whose_reply_is_lost_is_not_reported_as_done(
    world: World, lossy: Any
) -> None:
    """The check asks what the statement asked (scope, settings), not only the text: a
    memory out of reach that already held the text was not updated by this call."""
    same = {"memory_content": "{user} likes tea", "target_user": "Bob"}
    bobs = create_memory(world, {**same, "memory_scope": "target_user"})
    with world.store.accounts() as accounts:
        accounts.upsert_server("srv-a", personal_memories_enabled=False)
    proxy, store = lossy([b"kioku_update_memory"])
    result = run_tool(
        update_long_term_memory_tool(store), {"memory_id": bobs, **same}, world.context()
    ).result
    assert proxy.dropped.is_set()
    assert result["status"] == "memory_update_failed_db_error", result
    assert "nothing was changed" in result["reason"]
    assert [notice.kind for notice in world.notices] == ["created"]


def test_a_lost_reply_in_a_hidden_scope_names_no_memory(world: World, lossy: Any) -> None:
    # Bob's personal memories are hidden from the turn once personal memories are off; a
    # create there after a lost reply must not answer with an earlier memory's id.
    secret = {
        "memory_content": "Bob is interviewing at a rival company.",
        "memory_scope": "target_user",
        "target_user": "Bob",
    }
    tool = create_long_term_memory_tool(world.store)
    earlier = run_tool(tool, secret, world.context()).result
    assert earlier["status"] == "memory_saved_successfully"
    with world.store.accounts() as accounts:
        accounts.upsert_server("srv-a", "Server A", personal_memories_enabled=False)

    answers = []
    for content in (secret["memory_content"], "Bob collects fountain pens."):
        proxy, store = lossy([b"kioku_create_memory"])
        result = run_tool(
            create_long_term_memory_tool(store),
            {**secret, "memory_content": content},
            world.context(),
        ).result
        assert proxy.dropped.is_set(), "the proxy should have swallowed the reply"
        answers.append(result)
    right_guess, wrong_guess = answers
    assert len(world.notices) == 1, "no notice for the hidden saves: it would carry the id"
    for result in answers:
        assert result["status"] == "memory_saved_successfully", result
        assert "memory_id" not in result and "already_saved" not in result
        assert f"ID:{earlier['memory_id']}" not in result["reason"]
    assert right_guess["reason"] == wrong_guess["reason"]
