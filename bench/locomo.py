"""Retrieval quality on LoCoMo (issues #5, #15): plain cosine vs kioku's hybrid ranking.

Protocol: ../shared/bench-data/README.md. Same embedder (all-MiniLM-L6-v2) for both.
Run: .venv/bin/python -m bench.locomo [--data ../shared/bench-data/locomo-dev.json]
Prints recall per category (temporal is category 2), the same with the relevance floor,
the share of questions asked in another conversation's scope that find nothing, and
duplicate precision/recall (:mod:`bench.duplicates`); ``--ablation`` adds fusion settings,
``--embedder hashing`` the lexical embedder, ``--embedder multilingual``
multilingual-e5-small (``.[multilingual]``). With ``--answer``, answer accuracy instead
(:mod:`bench.answer`; needs a model endpoint). With ``--context``, the model-free answer
check instead (:mod:`bench.evidence`): per category, whether the whole context kioku would
give the model holds the gold answer, beside the evidence in it, against plain cosine.
Needs the local embedder: pip install torch==2.13.0 && pip install -e '.[local]'.
"""

from __future__ import annotations

import argparse
import os
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from bench.common import bench_database, open_store, read_samples
from bench.corpus import embedder_named
from bench.locomo_data import (
    DEFAULT_DATA,
    LoadedConversation,
    evidence_ids,
    load_conversation,
)
from kioku import KiokuStore
from kioku._calibration import RelevanceFloor, calibrated_floor
from kioku._db.models import Memory
from kioku._embeddings import (
    EmbedderSpec,
    embedding_text,
)
from kioku._search.engine import rank_candidates
from kioku._search.query import scope_condition
from kioku._search.scoring import FusionWeights

TOP_K = 10
"""Memories the answer harness gives the reader unless ``--top-k`` says otherwise."""


def add_answer_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of the answer-accuracy harness (:mod:`bench.answer`)."""
    group = parser.add_argument_group(
        "answer accuracy",
        "a reader model answers each question from kioku's top k memories; needs "
        "OPENAI_API_KEY (optional: OPENAI_BASE_URL, KIOKU_OPENAI_MODEL, KIOKU_JUDGE_MODEL)",
    )
    group.add_argument("--answer", action="store_true", help="score answers instead of recall")
    group.add_argument("--judge", action="store_true", help="also grade answers with an LLM judge")
    group.add_argument("--top-k", type=int, default=TOP_K, help=f"memories given (default {TOP_K})")
    group.add_argument("--limit", type=int, help="answer only the first N questions")
    group.add_argument("--json", type=Path, help="write the results to this file")


def arguments() -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    """The command line, parsed (the parser too, for its errors)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, required=DEFAULT_DATA is None)
    parser.add_argument(
        "--floor", type=float, help="relevance floor (cosine) to try (default: calibrated)"
    )
    parser.add_argument(
        "--embedder",
        choices=("local", "hashing", "multilingual"),
        default="local",
        help="all-MiniLM-L6-v2 (default; needs .[local]), the lexical hashing embedder, or "
        "multilingual-e5-small (needs .[multilingual])",
    )
    parser.add_argument(
        "--ablation", action="store_true", help="also rank with other fusion settings"
    )
    parser.add_argument(
        "--context",
        action="store_true",
        help="the model-free answer check on kioku's whole context (bench.evidence)",
    )
    add_answer_arguments(parser)
    return parser, parser.parse_args()


def main() -> None:
    """Load every conversation into its own scope, then score both rankings."""
    parser, args = arguments()
    if args.context:
        from bench.evidence import main as context_bench

        context_bench(["--data", str(args.data), "--embedder", args.embedder])
        return
    if args.answer:
        if args.floor is not None or args.embedder != "local":
            parser.error("--floor and --embedder go with the retrieval bench, not --answer")
        from bench.answer import run_answer_bench

        raise SystemExit(
            run_answer_bench(
                args.data, top_k=args.top_k, limit=args.limit, judge=args.judge, json_path=args.json
            )
        )
    if args.judge or args.limit is not None or args.json is not None or args.top_k != TOP_K:
        parser.error("--judge, --top-k, --limit and --json go with --answer")
    embedder = embedder_named(args.embedder)
    floor = (
        RelevanceFloor(args.floor) if args.floor is not None else calibrated_floor(embedder.model)
    )
    samples = read_samples(args.data)
    started = time.perf_counter()
    with bench_database("kioku_bench_locomo") as url:
        store = open_store(url, embedder)
        try:
            results = score(store, samples, embedder, floor, ablation=args.ablation)
        finally:
            store.close()
    print(
        f"LoCoMo dev, categories 1-4, {len(results['cosine']['recall@10'])} questions, "
        f"{time.perf_counter() - started:.0f} s, {embedder.model}, "
        f"relevance floor {floor.similarity:.3f} (cosine; stands out by {floor.stands_out}), "
        f"load {os.getloadavg()[0]:.2f}"
    )
    print_results(results, ablation=args.ablation)


Scores = dict[str, dict[str, list[float]]]
"""Ranking → metric (``recall@10``, ``recall@10/cat2``, …) → one value per question."""


def score(
    store: KiokuStore,
    samples: list[dict[str, Any]],
    embedder: EmbedderSpec,
    floor: RelevanceFloor,
    *,
    ablation: bool,
) -> Scores:
    """Every question of categories 1-4 with evidence, ranked in its conversation's scope.

    Each is also searched, with the floor, in another conversation's scope (where nothing
    is relevant).
    """
    results: Scores = defaultdict(lambda: defaultdict(list))
    loaded = [load_conversation(store, sample) for sample in samples]
    for index, (sample, conversation) in enumerate(zip(samples, loaded, strict=True)):
        other = loaded[(index + 1) % len(loaded)]  # with one conversation: itself
        for qa in sample["qa"]:
            category = int(qa.get("category", 0))
            evidence = evidence_ids(qa.get("evidence", []), set(conversation.dia_ids.values()))
            if category not in (1, 2, 3, 4) or not evidence:
                continue
            question = qa["question"]
            query_vector = embedder.embeddings.embed_query(embedding_text(question))
            with store.sessions() as session:
                rankings = _rankings(session, store, conversation, question, query_vector, floor)
                elsewhere = _hybrid(session, store, other, question, query_vector, floor)
                for name, variant in ABLATION.items() if ablation else ():
                    rankings[name] = _hybrid(
                        session, store, conversation, question, query_vector, None, **variant
                    )
            results["floor"]["nothing@other"].append(float(not elsewhere))
            for name, ranked in rankings.items():
                for k in (5, 10):
                    share = len(set(ranked[:k]) & set(evidence)) / len(evidence)
                    results[name][f"recall@{k}"].append(share)
                    results[name][f"recall@{k}/cat{category}"].append(share)
                results[name]["hit@10"].append(float(bool(set(ranked) & set(evidence))))
    return results


def print_results(results: Scores, *, ablation: bool) -> None:
    """The recall table, the ablation's, the nothing-relevant share and the duplicates'."""
    keys = ["recall@5", "recall@10", "hit@10"] + [f"recall@10/cat{c}" for c in (1, 2, 3, 4)]
    print(f"{'metric':<18} {'cosine':>8} {'hybrid':>8} {'+floor':>8} {'diff':>8}")
    for key in keys:
        a, b, c = (
            sum(results[name][key]) / len(results[name][key])
            for name in ("cosine", "hybrid", "floor")
        )
        print(f"{key:<18} {a:8.3f} {b:8.3f} {c:8.3f} {b - a:+8.3f}")
    if ablation:
        print(f"{'fusion ablation (no floor)':<34} {'recall@10':>9} {'temporal':>9}")
        for name in ABLATION:
            overall, temporal = (
                sum(results[name][key]) / len(results[name][key])
                for key in ("recall@10", "recall@10/cat2")
            )
            print(f"{name:<34} {overall:9.3f} {temporal:9.3f}")
    nothing = results["floor"]["nothing@other"]
    print(
        f"nothing relevant: questions searched in another conversation's scope that find "
        f"nothing, with the floor: {sum(nothing) / len(nothing):.3f}"
    )
    from bench import duplicates

    print("duplicates on write (python -m bench.duplicates):")
    print("\n".join(duplicates.report(duplicates.ALL_PAIRS)))


ABLATION: dict[str, dict[str, Any]] = {
    "default (1/1/0.3, time 1, pool 20)": {},
    "no relevance term": {"weights": FusionWeights(relevance=0.0)},
    "relevance 1.0": {"weights": FusionWeights(relevance=1.0)},
    "no time-phrase boost": {"weights": FusionWeights(time=0.0)},
    "text 0.5": {"weights": FusionWeights(text=0.5)},
    "vector 0.5": {"weights": FusionWeights(vector=0.5)},
    "pool 40": {"candidates": 40},
    "pool 80": {"candidates": 80},
}
"""Fusion settings tried by ``--ablation``, each beside the default in the same run."""


def _hybrid(
    session: Session,
    store: KiokuStore,
    conversation: LoadedConversation,
    question: str,
    vector: list[float],
    floor: RelevanceFloor | None,
    weights: FusionWeights | None = None,
    candidates: int | None = None,
) -> list[str]:
    """Kioku's hybrid ranking (top 10) of ``conversation``'s scope, as ``dia_id``s."""
    hits = rank_candidates(
        session,
        conversation.scope,
        question,
        vector,
        now=conversation.now,
        limit=10,
        aids=store.search_aids,
        floor=floor,
        weights=weights,
        candidates=candidates,
    ).hits()
    return [conversation.dia_ids[hit.id] for hit in hits]


def _rankings(
    session: Session,
    store: KiokuStore,
    conversation: LoadedConversation,
    question: str,
    vector: list[float],
    floor: RelevanceFloor,
) -> dict[str, list[str]]:
    """Plain cosine, hybrid, and hybrid with the relevance floor: top 10 ``dia_id``s each."""
    distance = Memory.embedding.cosine_distance(vector)
    cosine = session.scalars(
        select(Memory.id)
        .where(scope_condition(conversation.scope))
        .order_by(distance + 0)
        .limit(10)
    )
    return {
        "cosine": [conversation.dia_ids[i] for i in cosine],
        "hybrid": _hybrid(session, store, conversation, question, vector, None),
        "floor": _hybrid(session, store, conversation, question, vector, floor),
    }


if __name__ == "__main__":
    main()
