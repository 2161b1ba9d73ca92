"""Similarity thresholds per embedder, calibrated on the labelled sets in bench/RESULTS.md.

Cosine similarity means different things under different embedders: two paraphrases score
0.9 under MiniLM and 0.5 under the hashing embedder. Each threshold is chosen per embedder
(``python -m bench.duplicates`` and ``python -m bench.locomo`` measure them); settings
override them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Calibration:
    """Thresholds of one embedder's cosine similarity."""

    duplicate: float
    """A new memory at least this similar to one in its scope (and not told apart by its
    words, see :mod:`kioku._memory.sameness`) repeats it."""
    relevant: float
    """A memory at least this similar to a search query is related to it."""


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
    "multilingual:multilingual-e5-small-q4": Calibration(duplicate=0.940, relevant=0.845),
    # Not measurable on this project's machines (no network): values from the model's
    # usual similarity range, to be checked against your own data.
    "openai:text-embedding-3-small": Calibration(duplicate=0.80, relevant=0.30),
}
GENERIC = Calibration(duplicate=0.85, relevant=0.30)
"""For an embedder kioku has not measured."""


def relevance_floor(model: str, setting: float | None) -> float | None:
    """The search's minimum cosine similarity: ``setting`` (``-1``: none) or calibrated."""
    if setting is None:
        return calibration_for(model).relevant
    return None if setting <= -1.0 else setting


def calibration_for(model: str) -> Calibration:
    """The thresholds for the embedder stored as ``model`` (``hashing-384``, ``local:…``)."""
    if model.startswith("hashing-"):
        return CALIBRATIONS["hashing"]
    return CALIBRATIONS.get(model, GENERIC)
