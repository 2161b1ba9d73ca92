"""Fit an embedder's thresholds (:mod:`kioku._calibration`) on the sets in ``tests/data/``.

Run: ``.venv/bin/python -m bench.calibrate [--embedder multilingual|hashing|local|openai]``
(default ``multilingual``). Deterministic: no database, no network (except ``openai``).

- **Duplicate threshold**: every labelled pair of ``tests/data/duplicate_pairs*.jsonl``
  (English, six sets), the duplicate and near-miss pairs of
  ``tests/data/multilingual.json`` (eight languages) and every two distinct facts of one
  language there (a user's facts, none repeating another: 105 pairs per language) is
  judged by kioku's rule (:func:`kioku._memory.sameness.same_meaning`: cosine at the
  threshold, and no conflict in the words) at each threshold from 0.70 to 0.99; the fit is
  the lowest threshold whose precision over all pairs is at least 0.95 (issue #38's
  target) and that refuses no two distinct facts of a user ("facts" in the sweep: each
  such refusal loses a fact at write time), so recall is the most these allow.
- **Relevance floor** (a search answers ``no_memories_found`` unless some memory is at
  least this similar to the query, or matches enough of its words): per language of
  ``tests/data/multilingual.json``, the facts are embedded as memories and every query as
  a search; a query's score is its best cosine over its language's facts. The fit is the
  floor that keeps the most queries about stored facts (literal and paraphrased) while
  refusing the most queries about things not stored: the largest sum of both shares
  (ties: the lower floor). Literal queries are also let through by their words, so the
  shares here are cosine alone.
- **Standing out** (a query the floor refuses is still related when its nearest fact is
  this much more similar than the mean of the next ones): the lowest margin, in steps of
  0.005, at which no query about an absent thing clears the floor that way.

Prints the sweep around each fit and both fits; :mod:`kioku._calibration` records them.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bench.duplicates import ALL_PAIRS, load_pairs
from bench.multilingual import EMBEDDERS, embedder, load_set
from kioku._calibration import RelevanceFloor
from kioku._embeddings import EmbedderSpec, embedding_text
from kioku._memory.sameness import same_meaning
from kioku._memory.text import render_tokens

PRECISION_TARGET = 0.95
STEPS = [round(0.70 + 0.005 * i, 3) for i in range(59)]
"""Thresholds and floors tried: 0.700 to 0.990."""


@dataclass(frozen=True)
class Pair:
    """A labelled pair with its cosine similarity under the embedder."""

    source: str
    a: str
    b: str
    duplicate: bool
    similarity: float


def _cosine(u: Sequence[float], v: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(u, v, strict=True))


def labelled_pairs() -> list[tuple[str, dict[str, Any]]]:
    """Every committed pair as ``(set name, {a, b, duplicate})``."""
    found = [(path.stem, pair) for path in ALL_PAIRS for pair in load_pairs(path)]
    for code, data in load_set().items():
        user = data["user"]
        found += [
            (f"ml-{code}", {**p, "duplicate": True, "user": user}) for p in data["duplicates"]
        ]
        found += [
            (f"ml-{code}", {**p, "duplicate": False, "user": user}) for p in data["near_misses"]
        ]
        facts = [fact["memory"] for fact in data["facts"]]
        found += [
            (f"facts-{code}", {"a": a, "b": b, "duplicate": False, "user": user})
            for i, a in enumerate(facts)
            for b in facts[i + 1 :]
        ]
    return found


def scored_pairs(spec: EmbedderSpec) -> list[Pair]:
    """The pairs with their similarity.

    Both sides are embedded as memories are (as stored, ``{user}`` and all) and compared
    by their words as the duplicate check does (``{user}`` as the user's name).
    """
    labelled = labelled_pairs()
    texts = [embedding_text(p[k]) for _, p in labelled for k in ("a", "b")]
    vectors = spec.embeddings.embed_documents(texts)
    return [
        Pair(
            source,
            embedding_text(
                render_tokens(p["a"], user_name=p.get("user", "User"), bot_name="Kioku")
            ),
            embedding_text(
                render_tokens(p["b"], user_name=p.get("user", "User"), bot_name="Kioku")
            ),
            bool(p["duplicate"]),
            _cosine(vectors[2 * i], vectors[2 * i + 1]),
        )
        for i, (source, p) in enumerate(labelled)
    ]


def precision_recall(pairs: Sequence[Pair], threshold: float) -> tuple[float, float]:
    """Precision and recall of kioku's duplicate rule at ``threshold``."""
    said = [same_meaning(p.a, p.b, p.similarity, threshold) for p in pairs]
    true_positive = sum(s and p.duplicate for s, p in zip(said, pairs, strict=True))
    refused = sum(said)
    repeats = sum(p.duplicate for p in pairs)
    return true_positive / max(1, refused), true_positive / max(1, repeats)


def fit_duplicate(pairs: Sequence[Pair]) -> tuple[float, list[str]]:
    """The lowest threshold with precision at least the target and no distinct facts refused.

    Returns the threshold and the sweep's lines.
    """
    lines = [f"{'threshold':>9} {'P all':>6} {'R all':>6} {'P ml':>6} {'R ml':>6} {'facts':>5}"]
    multilingual = [p for p in pairs if p.source.startswith("ml-")]
    facts = [p for p in pairs if p.source.startswith("facts-")]
    chosen = STEPS[-1]
    for step in STEPS:
        precision, recall = precision_recall(pairs, step)
        ml_precision, ml_recall = precision_recall(multilingual, step)
        lost = sum(same_meaning(p.a, p.b, p.similarity, step) for p in facts)
        lines.append(
            f"{step:>9.3f} {precision:6.3f} {recall:6.3f} {ml_precision:6.3f} {ml_recall:6.3f} "
            f"{lost:>5}"
        )
        if precision >= PRECISION_TARGET and not lost and chosen == STEPS[-1]:
            chosen = step
    return chosen, lines


def per_set(pairs: Sequence[Pair], threshold: float) -> list[str]:
    """Precision and recall of each set at ``threshold``."""
    lines = []
    for source in sorted({p.source for p in pairs}):
        chosen = [p for p in pairs if p.source == source]
        precision, recall = precision_recall(chosen, threshold)
        refused = sum(same_meaning(p.a, p.b, p.similarity, threshold) for p in chosen)
        lines.append(
            f"  {source:<24} n={len(chosen):>3} refused {refused:>3} "
            f"P {precision:.3f} R {recall:.3f}"
        )
    return lines


def query_similarities(spec: EmbedderSpec) -> dict[str, list[list[float]]]:
    """Per kind of query (literal, paraphrase, absent), each query's cosine to every fact."""
    scores: dict[str, list[list[float]]] = {"literal": [], "paraphrase": [], "absent": []}
    for data in load_set().values():
        facts = spec.embeddings.embed_documents(
            [embedding_text(f["memory"]) for f in data["facts"]]
        )
        queries = {
            "literal": [f["literal"] for f in data["facts"]],
            "paraphrase": [f["paraphrase"] for f in data["facts"]],
            "absent": list(data["absent"]),
        }
        for kind, texts in queries.items():
            for text in texts:
                vector = spec.embeddings.embed_query(embedding_text(text))
                scores[kind].append([_cosine(vector, fact) for fact in facts])
    return scores


def best_scores(similarities: dict[str, list[list[float]]]) -> dict[str, list[float]]:
    """Each query's best cosine, per kind."""
    return {kind: [max(each) for each in queries] for kind, queries in similarities.items()}


MARGINS = [round(0.02 + 0.005 * i, 3) for i in range(13)]


def fit_stands_out(
    similarities: dict[str, list[list[float]]], floor: float
) -> tuple[float, list[str]]:
    """The lowest margin at which no query about an absent thing stands out past ``floor``.

    A query the floor refuses still counts as related when its nearest fact stands out
    from the rest by the margin (:class:`kioku._calibration.RelevanceFloor`); the fit lets
    through no absent query that way, so it only adds queries about stored facts.
    """
    lines = [f"{'margin':>6} {'literal':>8} {'paraphr':>8} {'absent':>7}"]
    chosen = MARGINS[-1]
    for margin in reversed(MARGINS):
        rule = RelevanceFloor(floor, stands_out=margin)
        kept = {kind: _share([rule.cleared_by(s) for s in q]) for kind, q in similarities.items()}
        lines.insert(
            1,
            f"{margin:6.3f} {kept['literal']:8.3f} {kept['paraphrase']:8.3f} {kept['absent']:7.3f}",
        )
        if kept["absent"] <= _share([max(s) >= floor for s in similarities["absent"]]):
            chosen = margin
    return chosen, lines


def _share(values: Sequence[bool]) -> float:
    return sum(values) / max(1, len(values))


def fit_floor(scores: dict[str, list[float]]) -> tuple[float, list[str]]:
    """The floor keeping the most stored-fact queries and refusing the most absent ones."""
    stored = scores["literal"] + scores["paraphrase"]
    lines = [f"{'floor':>6} {'literal':>8} {'paraphr':>8} {'stored':>7} {'refused':>8}"]
    best, best_sum = STEPS[0], -1.0
    for step in STEPS:
        kept = _share([s >= step for s in stored])
        refused = _share([s < step for s in scores["absent"]])
        literal = _share([s >= step for s in scores["literal"]])
        paraphrase = _share([s >= step for s in scores["paraphrase"]])
        lines.append(f"{step:6.3f} {literal:8.3f} {paraphrase:8.3f} {kept:7.3f} {refused:8.3f}")
        if kept + refused > best_sum + 1e-9:
            best, best_sum = step, kept + refused
    return best, lines


def near(lines: list[str], chosen: float, width: int = 4) -> list[str]:
    """The header and the sweep's lines within ``width`` steps of ``chosen``."""
    index = 1 + STEPS.index(chosen)
    return [lines[0], *lines[max(1, index - width) : index + width + 1]]


def main(argv: Sequence[str] | None = None) -> None:
    """Fit and print both thresholds of one embedder."""
    parser = argparse.ArgumentParser(prog="python -m bench.calibrate", description=__doc__)
    parser.add_argument("--embedder", choices=EMBEDDERS, default="multilingual")
    args = parser.parse_args(argv)
    spec = embedder(args.embedder)
    pairs = scored_pairs(spec)
    duplicate, sweep = fit_duplicate(pairs)
    print(f"{spec.model}: duplicate threshold sweep ({len(pairs)} pairs)")
    print("\n".join(near(sweep, duplicate)))
    print(f"per set at {duplicate:.3f}:")
    print("\n".join(per_set(pairs, duplicate)))
    similarities = query_similarities(spec)
    floor, floor_sweep = fit_floor(best_scores(similarities))
    print(f"{spec.model}: relevance floor sweep (share of queries whose best cosine clears it)")
    print("\n".join(near(floor_sweep, floor)))
    margin, margin_sweep = fit_stands_out(similarities, floor)
    print(f"{spec.model}: standing out at {floor:.3f} (share of queries clearing the floor)")
    print("\n".join(margin_sweep))
    if margin == MARGINS[-1]:
        print(f"no margin up to {MARGINS[-1]} lets no absent query through: none fitted")
    print(f"fit: duplicate={duplicate:.3f} relevant={floor:.3f} stands_out={margin:.3f}")


if __name__ == "__main__":
    main()
