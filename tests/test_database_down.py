"""Database down → a db_error status and a clear log line; service resumes afterwards."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from kioku import (
    KiokuSettings,
    KiokuStore,
    create_long_term_memory_tool,
    update_long_term_memory_tool,
)
from kioku._db.embedded import EmbeddedPostgres
from kioku._db.engine import make_engine
from kioku._stm.store import ShortTermMemory
from kioku._tools.invoke import run_tool_call
from kioku._tools.stm import update_short_term_memory_tool
from tests.helpers import arun_tool, make_world, run_tool


@pytest.fixture
def private_server(server_data_dir: Path) -> Iterator[EmbeddedPostgres]:
    """A server of this test's own, so stopping it disturbs no other test."""
    server = EmbeddedPostgres(server_data_dir)
    yield server
    server.stop()


def test_db_down_and_back(
    private_server: EmbeddedPostgres, caplog: pytest.LogCaptureFixture
) -> None:
    url = private_server.url
    store = KiokuStore(make_engine(url), settings=KiokuSettings(database_url=url))
    store.setup()
    stm = ShortTermMemory(store, store.checkpointer())
    world = make_world(store)
    create = create_long_term_memory_tool(store)
    update = update_long_term_memory_tool(store)
    first = run_tool(
        create, {"memory_content": "before", "memory_scope": "server_wide"}, world.context()
    )
    assert first.result["status"] == "memory_saved_successfully"

    private_server.kill()
    with caplog.at_level(logging.ERROR):
        down = run_tool(
            create, {"memory_content": "during", "memory_scope": "server_wide"}, world.context()
        )
        down_update = run_tool(
            update, {"memory_id": first.result["memory_id"], "memory_content": "x"}, world.context()
        )
        down_stm = run_tool_call(
            [update_short_term_memory_tool(stm)],
            "update_short_term_memory",
            {"summary": "while down"},
            world.context(),
        )
        down_async = arun_tool(
            create, {"memory_content": "during", "memory_scope": "server_wide"}, world.context()
        )
    assert down.result["status"] == "memory_save_failed_db_error"
    assert "unavailable" in down.result["reason"]
    assert down_update.result["status"] == "memory_update_failed_db_error"
    assert down_async.result["status"] == "memory_save_failed_db_error"
    assert json.loads(str(down_stm.message.content))["status"] == (
        "short_term_memory_update_failed_db_error"
    )
    assert "kioku: database error during create_long_term_memory" in caplog.text
    assert world.notices[-1].content == "before"  # nothing was announced while down

    private_server.start_again()
    again = run_tool(
        create, {"memory_content": "after", "memory_scope": "server_wide"}, world.context()
    )
    assert again.result["status"] == "memory_saved_successfully"
    again_async = arun_tool(
        create, {"memory_content": "after, async", "memory_scope": "server_wide"}, world.context()
    )
    assert again_async.result["status"] == "memory_saved_successfully"
    again_stm = run_tool_call(
        [update_short_term_memory_tool(stm)],
        "update_short_term_memory",
        {"summary": "after"},
        world.context(),
    )
    assert json.loads(str(again_stm.message.content))["status"] == (
        "short_term_memory_updated_successfully"
    )
    with store.sessions() as session:
        from sqlalchemy import text

        contents = session.execute(text("SELECT content FROM memories ORDER BY id")).scalars().all()
    assert contents == ["before", "after", "after, async"]
    asyncio.run(store.aclose())
