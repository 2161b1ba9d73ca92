"""Where kioku's per-turn time goes: each stage of :func:`bench.turn_scenario.kioku_turn`, timed.

The turn of ``python -m bench.turn`` (intent gate, context build, one update through the
tool, capture), run alone in this process; each stage's wall time per turn, p50 over the
turns after warm-up. ``--statements`` also replays the statements one turn sends past
SQLAlchemy (``kioku._db.driver``: the turn state, the rankings, the update) on a raw
psycopg connection (autocommit, as kioku runs the update), prepared and warm, and prints
each one's execute and fetch p50 (the update is replayed as it was: it writes again).

Run: .venv/bin/python -m bench.stages [--server-memories 100] [--turns 800] [--statements]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import psycopg

from bench import turn_scenario
from bench.common import bench_database
from bench.turn_scenario import Scenario, build_scenario
from kioku._context_build import run as run_module
from kioku._context_build.build import ContextBuilder
from kioku._context_build.stages import MemoryStages
from kioku._db import driver
from kioku._db.engine import libpq_url
from kioku._memory import repository
from kioku._stm.store import ShortTermMemory

STAGES: tuple[tuple[Any, str, str], ...] = (
    (ContextBuilder, "build", "context build"),
    (run_module.BuildRun, "assumed_memory_blocks", "  turn state with the memory blocks"),
    (run_module.BuildRun, "read_state", "  turn state alone (nothing to assume)"),
    (MemoryStages, "run", "  memory blocks (their rankings sent together)"),
    (turn_scenario, "update_long_term_memory", "update tool"),
    (ShortTermMemory, "capture", "capture"),
)
"""(owner, attribute, label): what is timed; stages with one label add up."""

DRIVER_USERS = (driver, repository)
"""Modules that call :func:`kioku._db.driver.fetch_all` (by its imported name; statements
sent together in one pipeline, such as the turn state with the rankings, are not
captured)."""


@contextmanager
def patched(owner: Any, name: str, wrapper: Callable[[Callable[..., Any]], Any]) -> Iterator[None]:
    """``owner.name`` replaced by ``wrapper(original)`` for the duration."""
    original = getattr(owner, name)
    setattr(owner, name, wrapper(original))
    try:
        yield
    finally:
        setattr(owner, name, original)


def timing(label: str, turn_times: dict[str, float]) -> Callable[[Callable[..., Any]], Any]:
    """A wrapper adding each call's wall time to ``turn_times[label]``."""

    def wrap(original: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                turn_times[label] = turn_times.get(label, 0.0) + time.perf_counter() - start

        return timed

    return wrap


def measure_stages(
    server_memories: int, turns: int, warmup: int = 50, statements: bool = False
) -> dict[str, Any]:
    """Stage p50s (ms) of kioku's bench turn and, with ``statements``, the raw replays."""
    vectors: dict[str, list[float]] = {}
    per_stage: dict[str, list[float]] = defaultdict(list)
    with bench_database(f"kioku_bench_stages_{server_memories}") as url:
        scenario = build_scenario(url, server_memories, 50, vectors)
        try:
            turn = turn_scenario.kioku_turn(
                scenario.store, scenario.stm, scenario.context, scenario.updatable, vectors
            )
            for i in range(warmup):
                turn(i)
            turn_times: dict[str, float] = {}
            with ExitStack() as stack:
                for owner, name, label in STAGES:
                    stack.enter_context(patched(owner, name, timing(label, turn_times)))
                for i in range(warmup, warmup + turns):
                    turn_times.clear()
                    start = time.perf_counter()
                    turn(i)
                    turn_times["turn"] = time.perf_counter() - start
                    for label, seconds in turn_times.items():
                        per_stage[label].append(seconds)
            result: dict[str, Any] = {
                "server_memories": server_memories,
                "turns": turns,
                "p50_ms": {k: statistics.median(v) * 1000 for k, v in per_stage.items()},
            }
            if statements:
                result["statements"] = replay_statements(scenario, turn, warmup + turns)
        finally:
            scenario.close()
    return result


def replay_statements(
    scenario: Scenario, turn: Callable[[int], None], i: int, repeats: int = 300
) -> list[dict[str, Any]]:
    """Each driver statement of turn ``i``, replayed warm on a raw connection."""
    captured: list[tuple[str, dict[str, Any]]] = []

    def capturing(original: Callable[..., Any]) -> Callable[..., Any]:
        def capture(session: Any, sql: str, params: Any, **kwargs: Any) -> Any:
            dialect = session.connection().dialect
            captured.append((driver.driver_sql(sql, dialect), dict(params)))
            return original(session, sql, params, **kwargs)

        return capture

    with ExitStack() as stack:
        for module in DRIVER_USERS:
            stack.enter_context(patched(module, "fetch_all", capturing))
        turn(i)
    replays = []
    with psycopg.connect(libpq_url(scenario.store.engine), autocommit=True) as conn:
        for sql, params in captured:
            executes, fetches = [], []
            with conn.cursor() as cursor:
                for _ in range(repeats):
                    start = time.perf_counter()
                    cursor.execute(sql.encode(), params, prepare=True)
                    middle = time.perf_counter()
                    rows = cursor.fetchall()
                    end = time.perf_counter()
                    executes.append(middle - start)
                    fetches.append(end - middle)
            replays.append(
                {
                    "statement": " ".join(sql.split())[:80],
                    "rows": len(rows),
                    "execute_p50_ms": statistics.median(executes[50:]) * 1000,
                    "fetch_p50_ms": statistics.median(fetches[50:]) * 1000,
                }
            )
    return replays


def main() -> None:
    """Print each stage's p50 (and, with ``--statements``, each statement's replay)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server-memories", type=int, default=100)
    parser.add_argument("--turns", type=int, default=800)
    parser.add_argument("--statements", action="store_true")
    args = parser.parse_args()
    result = measure_stages(args.server_memories, args.turns, statements=args.statements)
    print(f"{args.server_memories} per scope, {args.turns} turns after warm-up: p50 ms")
    for label, ms in result["p50_ms"].items():
        print(f"  {label:<16} {ms:7.3f}")
    for replay in result.get("statements", []):
        print(
            f"  execute {replay['execute_p50_ms']:.3f}  fetch {replay['fetch_p50_ms']:.3f}"
            f"  rows {replay['rows']:>4}  {replay['statement']}"
        )


if __name__ == "__main__":
    main()
