"""The LangGraph store under ``kioku reembed``: its items follow kioku's vector rule.

A store still on the old embedder after a switch writes its items queued (never an old
vector marked current) and searches by text, for a switch to a model of the same size and
to one of another size (issue #39, item 5).
"""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, text

from kioku import KiokuLangGraphStore, KiokuStore
from kioku._embeddings import EmbedderSpec
from kioku._reembed import reembed
from tests.reembed_worker import OLD
from tests.test_reembed import open_store
from tests.test_reembed_races import NEW, WIDER, assert_current, switched

NAMESPACE = ("memories", "u-alice")


def queued(engine: Engine, key: str) -> bool:
    """Whether item ``key``'s memory is queued without a vector."""
    with engine.connect() as connection:
        row = connection.execute(
            text(
                "SELECT m.embedding IS NULL AND m.needs_embedding FROM langgraph_items AS i "
                "JOIN memories AS m ON m.id = i.memory_id WHERE i.key = :key"
            ),
            {"key": key},
        ).one()
    return bool(row[0])


@pytest.mark.parametrize("to", [NEW, WIDER], ids=["same-size", "other-size"])
def test_items_written_after_a_switch_are_queued_and_found_by_text(
    fresh_database: str, to: EmbedderSpec
) -> None:
    worker = open_store(fresh_database, OLD)
    worker.setup()
    items = KiokuLangGraphStore(worker, user_label=1)
    items.put(NAMESPACE, "tea", {"content": "Alice drinks jasmine tea"})
    reembedding: KiokuStore = switched(worker, to)
    try:
        reembed(reembedding)
        items.put(NAMESPACE, "bike", {"content": "Alice rides a red bicycle"})
        items.put(NAMESPACE, "tea", {"content": "Alice drinks oolong tea now"})
        assert queued(worker.engine, "bike") and queued(worker.engine, "tea")
        [hit] = items.search(("memories",), query="bicycle", limit=1)
        assert hit.key == "bike"
        assert reembed(reembedding).embedded == 2
        assert_current(worker.engine, to)
    finally:
        reembedding.close()
        worker.close()
