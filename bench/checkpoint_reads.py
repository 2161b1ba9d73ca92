"""Reading a thread's latest checkpoint, as every turn starts: kioku's saver and LangGraph's.

A small chat graph runs turns on threads of several lengths (``--lengths``) of
``store.checkpointer()`` on a fresh database, keeping the last exchange only (as an agent
trimming its thread keeps its state small: what grows is the thread's history of
checkpoints and blobs, not the state read); then the latest checkpoint of
each thread is read, alternately, by kioku's saver and by ``PostgresSaver`` as its docs
build it (``from_conn_string``), the same rows. Prints each one's ``get_tuple`` p50 (ms)
per thread length, and the server's execution time of each statement (``EXPLAIN
ANALYZE``), with the load average.

Run: .venv/bin/python -m bench.checkpoint_reads [--lengths 10 100 300 1000] [--reads 200]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.graph import START, StateGraph
from sqlalchemy import text

from bench.agent_rounds import loadavg
from bench.common import bench_database, open_store
from bench.corpus import embedder_named
from kioku import KiokuStore
from kioku._db.engine import libpq_url
from kioku._db.saver import SELECT_SQL

LATEST = "WHERE thread_id = :t AND checkpoint_ns = '' ORDER BY checkpoint_id DESC LIMIT 1"
"""What follows a read statement to read a thread's latest checkpoint (``:t``)."""


class Exchange(TypedDict):
    """The last message and its answer (each turn replaces them)."""

    last: list[str]


def grow(store: KiokuStore, thread_id: str, turns: int) -> RunnableConfig:
    """``turns`` turns of a one-node chat graph on ``thread_id``; its config."""
    graph = StateGraph(Exchange)
    graph.add_node("answer", lambda state: {"last": [*state["last"][:1], "noted"]})
    graph.add_edge(START, "answer")
    chat = graph.compile(checkpointer=store.checkpointer())
    config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
    for turn in range(turns):
        chat.invoke({"last": [f"message {turn}"]}, config)
    return config


def timed_reads(savers: dict[str, Any], config: RunnableConfig, reads: int) -> dict[str, float]:
    """Each saver's ``get_tuple`` p50 (ms), the savers alternating read by read."""
    times: dict[str, list[float]] = {name: [] for name in savers}
    for _ in range(reads):
        for name, saver in savers.items():
            start = time.perf_counter()
            saver.get_tuple(config)
            times[name].append((time.perf_counter() - start) * 1000)
    return {name: round(statistics.median(found), 3) for name, found in times.items()}


def executed_ms(store: KiokuStore, statement: str, thread_id: str) -> float:
    """The server's execution time (ms) of ``statement`` reading the thread's latest."""
    with store.engine.connect() as connection:
        for _ in range(3):  # warm
            plan = connection.execute(
                text("EXPLAIN (ANALYZE, FORMAT JSON) " + statement + LATEST), {"t": thread_id}
            ).scalar_one()
    return round(float(plan[0]["Execution Time"]), 3)


def measure(lengths: list[int], reads: int) -> list[dict[str, Any]]:
    """Per thread length: each saver's read p50 and each statement's server time."""
    rows: list[dict[str, Any]] = []
    with bench_database("kioku_bench_checkpoint_reads") as url:
        store = open_store(url, embedder_named("hashing"))
        try:
            with PostgresSaver.from_conn_string(libpq_url(store.engine)) as langgraph_saver:
                savers = {"kioku": store.checkpointer(), "PostgresSaver": langgraph_saver}
                for length in lengths:
                    config = grow(store, f"thread-{length}", length)
                    thread = config["configurable"]["thread_id"]
                    rows.append(
                        {
                            "turns": length,
                            "read_p50_ms": timed_reads(savers, config, reads),
                            "server_ms": {
                                "kioku": executed_ms(store, SELECT_SQL, thread),
                                "PostgresSaver": executed_ms(
                                    store, PostgresSaver.SELECT_SQL, thread
                                ),
                            },
                        }
                    )
        finally:
            store.close()
    return rows


def main(argv: list[str] | None = None) -> None:
    """Print the reads as a markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[10, 100, 300, 1000])
    parser.add_argument("--reads", type=int, default=200, help="reads per saver per length")
    args = parser.parse_args(argv)
    before = loadavg()
    rows = measure(args.lengths, args.reads)
    print(f"load average before {before}, after {loadavg()}")
    print(
        "| turns in the thread | kioku get_tuple p50 ms | PostgresSaver p50 ms "
        "| kioku server ms | PostgresSaver server ms |\n|---:|---:|---:|---:|---:|"
    )
    for row in rows:
        read, server = row["read_p50_ms"], row["server_ms"]
        print(
            f"| {row['turns']} | {read['kioku']} | {read['PostgresSaver']} "
            f"| {server['kioku']} | {server['PostgresSaver']} |"
        )


if __name__ == "__main__":
    main()
