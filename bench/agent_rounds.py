"""Timing of the agent benchmark: alternating rounds, order reversed every round."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.agent_model import Contender
from bench.common import percentile

TURNS_PER_ROUND = 5
WARMUP_TURNS = 10


def loadavg() -> str:
    """``/proc/loadavg``'s three load averages (1, 5 and 15 minutes)."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def alternate(
    turns: dict[str, Callable[[], object]], timed: int, warmup: int = WARMUP_TURNS
) -> dict[str, list[float]]:
    """Turn times (ms): ``warmup`` untimed turns each, then rounds, order reversed each round.

    Each round runs :data:`TURNS_PER_ROUND` turns of every contender in turn; about
    ``timed`` turns of each are timed.
    """
    for run in turns.values():
        for _ in range(warmup):
            run()
    samples: dict[str, list[float]] = {name: [] for name in turns}
    order = list(turns)
    for _ in range(max(1, timed // TURNS_PER_ROUND)):
        for name in order:
            for _ in range(TURNS_PER_ROUND):
                start = time.perf_counter()
                turns[name]()
                samples[name].append((time.perf_counter() - start) * 1000)
        order.reverse()
    return samples


def summary(samples: list[float]) -> dict[str, float]:
    """p50 and p95 (ms) of ``samples``, and how many there are."""
    return {
        "p50_ms": round(statistics.median(samples), 2),
        "p95_ms": round(percentile(samples, 0.95), 2),
        "turns": len(samples),
    }


def stepper(contender: Contender, last: dict[str, Any]) -> Callable[[], object]:
    """A call running ``contender``'s next turn, keeping its final state in ``last``."""
    step = iter(range(10**9))

    def run() -> object:
        last["state"] = contender.turn(next(step))
        return None

    return run
