"""Latency samples of contenders timed in alternating rounds (bench-wide)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from bench.common import percentile

ROUNDS = 5
TURNS_PER_ROUND = 5
"""Turns each contender takes before the next one's: short rounds, so the machine's slow
spells fall on every contender alike."""


@dataclass
class Rounds:
    """Latency samples (ms) per contender, gathered in alternating rounds."""

    samples: dict[str, list[float]]

    @classmethod
    def run(
        cls, contenders: dict[str, Callable[[], object]], per_round: int, rounds: int = ROUNDS
    ) -> Rounds:
        """Time each contender ``per_round`` calls per round, ``rounds`` rounds, after warm-up.

        More, shorter rounds spread a noisy neighbour's bursts more evenly over the
        contenders.
        """
        samples: dict[str, list[float]] = {name: [] for name in contenders}
        for call in contenders.values():
            for _ in range(10):
                call()
        for _ in range(rounds):
            for name, call in contenders.items():
                for _ in range(per_round):
                    start = time.perf_counter()
                    call()
                    samples[name].append((time.perf_counter() - start) * 1000)
        return cls(samples)

    @classmethod
    def of_turns(cls, contenders: dict[str, Callable[[], object]], turns: int) -> Rounds:
        """About ``turns`` timed calls each, alternating every :data:`TURNS_PER_ROUND`."""
        return cls.run(
            contenders, per_round=TURNS_PER_ROUND, rounds=max(1, turns // TURNS_PER_ROUND)
        )

    def p50(self, name: str) -> float:
        """Median latency of ``name``."""
        return statistics.median(self.samples[name])

    def p95(self, name: str) -> float:
        """95th percentile latency of ``name``."""
        return percentile(self.samples[name], 0.95)

    def per_second(self, name: str) -> float:
        """Calls per second of ``name`` over all its samples."""
        return 1000 * len(self.samples[name]) / sum(self.samples[name])


def numbered(turn: Callable[[int], None], step: Iterator[int]) -> Callable[[], object]:
    """``turn`` called with the next number of ``step`` (shared, so peers ask alike)."""
    return lambda: turn(next(step))
