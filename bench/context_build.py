"""Context build latency (issue #3): p50/p95 over a realistic memory load.

Scenario per case: 100 server memories, 5 participants x 100 personal memories, and
short-term memory in N other channels (50, then 1,000) plus the current one, on a real
PostgreSQL (embedded unless KIOKU_DATABASE_URL is set) with LangGraph's PostgresSaver.

Run: .venv/bin/python -m bench.context_build [--iterations 300]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage
from sqlalchemy import text

from bench.common import percentile, seed_accounts
from bench.turn_scenario import (
    PARTICIPANTS,
    SERVER,
    current_context,
    seed_stm,
)
from kioku import KiokuSettings, KiokuStore, TurnContext, load_settings
from kioku._context_build.build import ContextBuilder
from kioku._db.models import Memory
from kioku._stm.store import ShortTermMemory

RESET_TABLES = (
    "memories, memory_access, memory_counts, memory_history, memory_subjects, langgraph_items, "
    "stm_threads, checkpoints, checkpoint_blobs, checkpoint_writes"
)
"""Every table a case's seed writes, or that refers to what it writes (emptied together)."""
DIALOGUE = [HumanMessage("User 0: hi"), AIMessage("hello!"), HumanMessage("User 0: what's up?")]


def _seed(store: KiokuStore, stm: ShortTermMemory, channels: int) -> TurnContext:
    """A fresh scenario with ``channels`` other channels; the current channel's context.

    :mod:`bench.turn_scenario`'s people, synthetic memories (no vectors), and its
    short-term memory.
    """
    with store.transaction() as session:
        session.execute(text(f"TRUNCATE {RESET_TABLES}"))
    persona = seed_accounts(store, SERVER, "Bench", PARTICIPANTS)
    with store.transaction() as session:
        session.add_all(
            Memory(
                scope="server",
                server_id=SERVER,
                persona_lineage_id=persona.lineage_id,
                content=f"{{bot}} knows server fact number {i}: the tea of day {i} is oolong",
            )
            for i in range(100)
        )
        session.add_all(
            Memory(
                scope="personal",
                user_id=p.user_id,
                persona_lineage_id=persona.lineage_id,
                content=f"{{user}} told {{bot}} personal fact {i} about their hobbies",
            )
            for p in PARTICIPANTS
            for i in range(100)
        )
    context = current_context(persona)
    seed_stm(stm, context, channels)
    return context


def _measure(run: Callable[[], object], iterations: int) -> tuple[float, float, float]:
    for _ in range(20):
        run()
    samples = []
    for _ in range(iterations):
        t = time.perf_counter()
        run()
        samples.append((time.perf_counter() - t) * 1000)
    return statistics.median(samples), percentile(samples, 0.95), max(samples)


def _report(label: str, stats: tuple[float, float, float]) -> None:
    print(f"{label:<48} {stats[0]:8.2f} {stats[1]:8.2f} {stats[2]:8.2f}")


def _case(
    store: KiokuStore, builder: ContextBuilder, context: TurnContext, channels: int, runs: int
) -> None:
    built = builder.build(context, DIALOGUE)
    assert not built.failed_stages, built.failed_stages

    def cold() -> object:
        for key in store.cache.cached_keys():
            store.cache.invalidate(key)
        return builder.build(context, DIALOGUE)

    label = f"100 server + 5x100 personal + {channels} ch"
    _report(label + " (LTM cached)", _measure(lambda: builder.build(context, DIALOGUE), runs))
    _report(label + " (LTM cold)", _measure(cold, runs))
    print(f"  tokens per block: {built.tokens}  omitted: {built.omitted}")


def main() -> None:
    """Seed each case, then time ``ContextBuilder.build``."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--iterations", type=int, default=300)
    args = parser.parse_args()
    settings = load_settings()
    if settings.database_url is None:
        settings = KiokuSettings(data_dir=Path(tempfile.mkdtemp(prefix="kioku-bench-")))
    store = KiokuStore.open(settings)
    store.setup()
    now = datetime.now(UTC)
    stm = ShortTermMemory(store, store.checkpointer(), clock=lambda: now)
    builder = ContextBuilder(store, stm)
    print(f"{'case':<48} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
    try:
        for channels in (50, 1000):
            context = _seed(store, stm, channels)
            _case(store, builder, context, channels, args.iterations)
    finally:
        store.close()


if __name__ == "__main__":
    main()
