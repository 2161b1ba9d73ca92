"""Similarity thresholds per embedder, calibrated on the labelled sets in bench/RESULTS.md.

Cosine similarity means different things under different embedders: two paraphrases score
0.9 under MiniLM and 0.5 under the hashing embedder. Each threshold is chosen per embedder
(``python -m bench.duplicates`` and ``python -m bench.locomo`` measure them); settings
override them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Calibration:
    """Thresholds of one embedder's cosine similarity."""

    duplicate: float
    """A new memory at least this similar to one in its scope (and not told apart by its
    words, see :mod:`kioku._memory.sameness`) repeats it."""
    relevant: float
    """A memory at least this similar to a search query is related to it."""
    stands_out: float | None = None
    """Or the nearest memory, when it is this much more similar to the query than the
    next ones on average (:class:`RelevanceFloor`; ``None``: not measured)."""


CALIBRATIONS: dict[str, Calibration] = {
    "hashing": Calibration(duplicate=0.75, relevant=0.30),
    "local:all-MiniLM-L6-v2": Calibration(duplicate=0.78, relevant=0.45),
    # python -m bench.calibrate --embedder multilingual, on tests/data/ (2,447 labelled pairs:
    # English pair sets, multilingual duplicates and near misses, every two distinct facts
    # of a user in seven languages; 252 queries): the lowest duplicate threshold with
    # precision >= 0.95 that refuses no distinct fact; the floor keeping the most queries
    # about stored facts while refusing the most about absent ones. e5's cosines are
    # compressed: two distinct facts of one user in one language score up to 0.95 (their
    # words, names and numbers tell most apart; at 0.935 one pair would be refused, since
    # Japanese and Chinese are compared character by character).
    # stands_out: the lowest margin (steps of 0.005) at which no query about an absent
    # thing clears the floor by standing out (tests/data/multilingual.json).
    "multilingual:multilingual-e5-small-q4": Calibration(
        duplicate=0.940, relevant=0.845, stands_out=0.045
    ),
    # Not measurable on this project's machines (no network): values from the model's
    # usual similarity range, to be checked against your own data.
    "openai:text-embedding-3-small": Calibration(duplicate=0.80, relevant=0.30),
}
GENERIC = Calibration(duplicate=0.85, relevant=0.30)
"""For an embedder kioku has not measured."""


STAND_OUT_PEERS = 10
"""Memories besides the nearest a scope needs before the nearest can stand out."""
STAND_OUT_COMPARED = 19
"""Next nearest memories whose mean similarity the nearest is compared with."""


@dataclass(frozen=True)
class RelevanceFloor:
    """When the memories a search found are about its query at all (else: nothing is).

    Some memory is at least :attr:`similarity` similar to the query (cosine), or the
    nearest stands out: it is at least :attr:`stands_out` more similar than the mean of
    the next :data:`STAND_OUT_COMPARED` (at least :data:`STAND_OUT_PEERS` found besides
    it). An embedder whose similarities crowd together (e5: every text of a
    language scores about 0.8 against every other) says more by how far one memory
    stands out from the rest than by its similarity alone.
    """

    similarity: float
    stands_out: float | None = None

    def cleared_by(self, similarities: Sequence[float]) -> bool:
        """Whether memories of these similarities to the query clear the floor."""
        if not similarities or max(similarities) >= self.similarity:
            return bool(similarities)
        if self.stands_out is None or len(similarities) - 1 < STAND_OUT_PEERS:
            return False
        ranked = sorted(similarities, reverse=True)
        next_ones = ranked[1 : 1 + STAND_OUT_COMPARED]
        return ranked[0] - sum(next_ones) / len(next_ones) >= self.stands_out


def relevance_floor(model: str, setting: float | None) -> RelevanceFloor | None:
    """The search's relevance floor: ``setting`` (a cosine; ``-1``: none) or calibrated.

    A floor set by hand is the similarity alone; the calibrated one may also let the
    nearest memory stand out (:class:`RelevanceFloor`).
    """
    if setting is None:
        return calibrated_floor(model)
    return None if setting <= -1.0 else RelevanceFloor(setting)


def calibrated_floor(model: str) -> RelevanceFloor:
    """The relevance floor calibrated for the embedder stored as ``model``."""
    calibration = calibration_for(model)
    return RelevanceFloor(calibration.relevant, calibration.stands_out)


def calibration_for(model: str) -> Calibration:
    """The thresholds for the embedder stored as ``model`` (``hashing-384``, ``local:…``)."""
    if model.startswith("hashing-"):
        return CALIBRATIONS["hashing"]
    return CALIBRATIONS.get(model, GENERIC)
