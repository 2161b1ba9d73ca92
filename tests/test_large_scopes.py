"""Scopes larger than the memory window are never loaded whole, yet render sensibly."""

from __future__ import annotations

from datetime import timedelta

from langchain_core.messages import HumanMessage
from sqlalchemy import insert

from kioku import KiokuStore
from kioku._context_build.build import ContextBuilder
from kioku._db.models import Memory
from kioku._domain.scopes import ServerScope
from kioku._memory.windows import MEMORY_WINDOW
from tests.helpers import T0, make_world


def test_a_scope_beyond_the_window_renders_the_newest_and_the_relevant(store: KiokuStore) -> None:
    world = make_world(store)
    lineage = world.persona.lineage_id
    count = MEMORY_WINDOW + 300
    rows = [
        {
            "scope": "server",
            "server_id": "srv-a",
            "persona_lineage_id": lineage,
            "content": f"Routine note number {i} about the weekly schedule",
            "created_at": T0 + timedelta(minutes=i),
        }
        for i in range(count)
    ]
    rows[0]["content"] = "The wifi password is kept in the blue binder"  # the oldest of all
    with store.transaction() as session:
        session.execute(insert(Memory), rows)
    window = store.memory_window(ServerScope("srv-a", lineage))
    assert len(window.records) == MEMORY_WINDOW and window.total == count

    built = ContextBuilder(store).build(
        world.context(), [HumanMessage("Where is the wifi password?", name="Alice")]
    )
    text = "\n".join(item.text for item in built.items)
    assert "blue binder" in text  # found by retrieval, though far outside the window
    shown = text.count("Routine note") + 1
    assert f"({count - shown} more memories not shown; search_long_term_memory" in text
