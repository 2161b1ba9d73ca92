"""Relevance and rank fusion: pure functions."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

RRF_K = 60
"""The usual reciprocal-rank-fusion constant."""


def relevance(importance: float, decay_rate: float, age_days: float) -> float:
    """``importance × exp(−decay_rate × age_in_days)``, computed at read time (SPEC §2)."""
    return importance * math.exp(-decay_rate * max(0.0, age_days))


@dataclass(frozen=True)
class FusionWeights:
    """How much each ranking counts in the fused score."""

    vector: float = 1.0
    text: float = 1.0
    relevance: float = 0.3
    time: float = 1.0
    """Candidates within the window a time phrase of the query names."""


def fuse(
    rankings: Mapping[str, Sequence[int]], weights: Mapping[str, float], *, k: int = RRF_K
) -> list[tuple[int, float]]:
    """Weighted reciprocal rank fusion of ranked id lists, best first (ties by id)."""
    scores: dict[int, float] = {}
    for name, ids in rankings.items():
        weight = weights.get(name, 1.0)
        for rank, memory_id in enumerate(ids, start=1):
            scores[memory_id] = scores.get(memory_id, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))
