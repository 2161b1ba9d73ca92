"""Notices go to the custom stream and the notifier; their failures change nothing (SPEC §8)."""

from __future__ import annotations

import logging

import pytest

from kioku import NOTICE_STREAM_TYPE, KiokuStore, MemoryNotice, create_long_term_memory_tool
from kioku._tools.ltm import update_long_term_memory_tool
from tests.helpers import make_world, run_tool, table_counts


def test_notice_reaches_stream_and_callback(store: KiokuStore) -> None:
    world = make_world(store)
    run = run_tool(
        create_long_term_memory_tool(store),
        {
            "memory_content": "{user} likes {bot}",
            "memory_scope": "target_user",
            "target_user": "Bob",
        },
        world.context(),
    )
    assert run.result["status"] == "memory_saved_successfully"
    [event] = run.custom
    assert event["type"] == NOTICE_STREAM_TYPE
    notice = event["notice"]
    assert notice == {
        "kind": "created",
        "scope": "target_user",
        "memory_id": run.result["memory_id"],
        "content": "Bob likes Kioku",
        "persona_name": "Kioku",
        "target_user": "Bob",
        "footer": f"ID:{run.result['memory_id']} · ask Kioku to correct or forget it any time.",
    }
    assert world.notices == [MemoryNotice(**notice)]


def test_failing_callback_does_not_change_the_status(
    store: KiokuStore, caplog: pytest.LogCaptureFixture
) -> None:
    world = make_world(store)

    def broken(notice: MemoryNotice) -> None:
        raise ConnectionError("chat platform is down")

    context = world.context(notifier=broken)
    with caplog.at_level(logging.ERROR):
        run = run_tool(
            create_long_term_memory_tool(store),
            {"memory_content": "x", "memory_scope": "server_wide"},
            context,
        )
        assert run.result["status"] == "memory_saved_successfully"
        deleted = run_tool(
            update_long_term_memory_tool(store),
            {"memory_id": run.result["memory_id"], "memory_content": ""},
            context,
        )
    assert deleted.result["status"] == "memory_deleted_successfully"
    assert "notice callback failed" in caplog.text
    assert table_counts(store) == (0, 2)


def test_failures_emit_no_notice(store: KiokuStore) -> None:
    world = make_world(store)
    run = run_tool(
        create_long_term_memory_tool(store),
        {"memory_content": "x", "memory_scope": "target_user", "target_user": "Carol"},
        world.context(),
    )
    assert run.result["status"] == "memory_save_failed_privacy_restricted"
    assert run.custom == [] and world.notices == []


def test_personal_footer_when_personal_memories_are_off(store: KiokuStore) -> None:
    world = make_world(store)
    with store.accounts() as accounts:
        accounts.upsert_server("srv-a", personal_memories_enabled=False)
    run_tool(
        create_long_term_memory_tool(store),
        {"memory_content": "x", "memory_scope": "target_user", "target_user": "Alice"},
        world.context(),
    )
    assert "turned off" in world.notices[-1].footer
