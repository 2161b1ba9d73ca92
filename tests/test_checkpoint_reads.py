"""Reading a thread's checkpoint looks its blobs up by key: the work does not grow with
the thread's history (``kioku._db.saver.SELECT_SQL``)."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.graph import START, MessagesState, StateGraph
from sqlalchemy import text

from bench.checkpoint_reads import LATEST
from kioku import KiokuStore
from kioku._db import saver
from kioku._db.engine import libpq_url

TURNS = 60


def _chat(store: KiokuStore, thread_id: str) -> dict[str, Any]:
    """``TURNS`` turns of a small graph on ``store.checkpointer()``; its config."""
    graph = StateGraph(MessagesState)
    graph.add_node("answer", lambda state: {"messages": [AIMessage("noted")]})
    graph.add_edge(START, "answer")
    agent = graph.compile(checkpointer=store.checkpointer())
    config: dict[str, Any] = {"configurable": {"thread_id": thread_id}}
    for turn in range(TURNS):
        agent.invoke({"messages": [HumanMessage(f"turn {turn}")]}, config)
    return config


def _blob_rows_read(store: KiokuStore, statement: str, thread_id: str) -> int:
    """Rows the latest-checkpoint read of ``statement`` took from ``checkpoint_blobs``."""
    with store.engine.connect() as connection:
        [[plan]] = connection.execute(
            text("EXPLAIN (ANALYZE, FORMAT JSON) " + statement + LATEST), {"t": thread_id}
        ).all()
    return _rows_of(plan if isinstance(plan, list) else json.loads(plan), "checkpoint_blobs")


def _rows_of(node: Any, relation: str) -> int:
    if isinstance(node, list):
        return sum(_rows_of(item, relation) for item in node)
    if not isinstance(node, dict):
        return 0
    own = node.get("Relation Name") == relation
    rows = int(node.get("Actual Rows", 0) * node.get("Actual Loops", 1)) if own else 0
    return rows + sum(_rows_of(value, relation) for value in node.values())


def test_the_saver_reads_blobs_by_key_not_by_joining_the_thread() -> None:
    assert saver._BLOBS_JOINED in PostgresSaver.SELECT_SQL  # else LangGraph changed it
    assert saver.PostgresSaverForBoth.SELECT_SQL == saver.SELECT_SQL != PostgresSaver.SELECT_SQL


def test_reading_the_latest_checkpoint_touches_only_its_own_blobs(store: KiokuStore) -> None:
    config = _chat(store, "long-thread")
    latest = store.checkpointer().get_tuple(config)
    assert latest is not None
    channels = len(latest.checkpoint["channel_versions"])
    assert _blob_rows_read(store, saver.SELECT_SQL, "long-thread") <= channels
    # LangGraph's own statement reads the thread's every blob (what this test tells apart).
    assert _blob_rows_read(store, PostgresSaver.SELECT_SQL, "long-thread") > TURNS
    messages = latest.checkpoint["channel_values"]["messages"]
    assert [m.content for m in messages[-2:]] == [f"turn {TURNS - 1}", "noted"]
    assert len(messages) == 2 * TURNS


def test_reads_give_what_postgres_saver_gives(store: KiokuStore) -> None:
    config = _chat(store, "compared")
    ours = store.checkpointer()
    with PostgresSaver.from_conn_string(libpq_url(store.engine)) as theirs:
        assert _tuples(ours.list(config)) == _tuples(theirs.list(config))
        assert _tuples([ours.get_tuple(config)]) == _tuples([theirs.get_tuple(config)])


def _tuples(found: Any) -> list[tuple[Any, ...]]:
    return [
        (t.config, t.checkpoint["channel_values"], t.metadata, t.parent_config, t.pending_writes)
        for t in found
    ]
