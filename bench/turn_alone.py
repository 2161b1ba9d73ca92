"""kioku's turn alone in its process, on a quiet machine: the absolute per-turn figure.

In :mod:`bench.turn`'s alternating runs each peer's turns come between kioku's, which is
right for ratios and adds to absolutes; this times kioku's turns with nothing between them.
"""

from __future__ import annotations

import os
import time
from typing import Any

from bench.common import bench_database
from bench.rounds import Rounds, numbered
from bench.turn_scenario import (
    build_scenario,
    kioku_turn,
)

ALONE_TURNS = 600
"""Turns timed for :func:`measure_alone` (after warm-up): enough for a steady p95."""

QUIET_LOAD = 0.3
"""The 1-minute load average :func:`wait_for_quiet` waits for: an idle machine."""
QUIET_WAIT_S = 240.0
"""How long the idle-machine step waits at most for :data:`QUIET_LOAD`."""


def wait_for_quiet(limit_s: float, threshold: float = QUIET_LOAD) -> float:
    """Wait until the load average is at most ``threshold``, at most ``limit_s``; seconds waited.

    The previous step (or the scenario's own inserts) leaves the load average high for a
    minute or two after the machine has gone quiet.
    """
    started = time.monotonic()
    while os.getloadavg()[0] > threshold:
        left = limit_s - (time.monotonic() - started)
        if left <= 0:
            break
        time.sleep(min(5.0, left))
    return time.monotonic() - started


def measure_alone(
    server_memories: int, turns: int = ALONE_TURNS, quiet_wait_s: float = 0.0
) -> dict[str, Any]:
    """The turn of kioku alone in its process (no peer between its turns): the absolute figure.

    The issue's "p95 on an idle machine" is a figure of kioku's own work; in the
    alternating runs each peer's turns (other allocations, other connections) come between
    kioku's, which is right for ratios and adds to absolutes. Once the scenario is loaded,
    it waits up to ``quiet_wait_s`` for the machine to be idle (:func:`wait_for_quiet`);
    the load average before and after says how idle it was.
    """
    vectors: dict[str, list[float]] = {}
    with bench_database(f"kioku_bench_alone_{server_memories}") as url:
        scenario = build_scenario(url, server_memories, 50, vectors)
        try:
            ours = kioku_turn(
                scenario.store, scenario.stm, scenario.context, scenario.updatable, vectors
            )
            step = iter(range(10**9))
            waited = wait_for_quiet(quiet_wait_s)
            load_before = os.getloadavg()[0]
            rounds = Rounds.of_turns({"kioku": numbered(ours, step)}, turns)
            load_after = os.getloadavg()[0]
        finally:
            scenario.close()
    return {
        "server_memories": server_memories,
        "turns": len(rounds.samples["kioku"]),
        "p50_ms": rounds.p50("kioku"),
        "p95_ms": rounds.p95("kioku"),
        "load_before": round(load_before, 2),
        "load_after": round(load_after, 2),
        "quiet_wait_s": round(waited),
    }
