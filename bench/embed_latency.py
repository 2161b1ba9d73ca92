"""What embedding one short search query costs, per embedder (issue #38, item 2).

Run: ``.venv/bin/python -m bench.embed_latency [--embedder hashing|multilingual|local|openai|all]``
(default ``all``; embedders that cannot run here are skipped with the reason).

Every query of ``tests/data/multilingual.json`` (literal, paraphrased and not-in-memory
queries in seven languages: 252 short texts) is embedded as a search is
(``embed_query``), after a warm-up, ``--rounds`` times over; reported per embedder: the
first call (loading the model), the wall time per query (p50, p95) and the CPU time per
query of the whole process (so a model using more than one thread shows it), with the
load average before and after. The learned local models run on the threads kioku gives
them (``E5_THREADS``: one).
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from collections.abc import Sequence

from bench.common import percentile
from bench.multilingual import EMBEDDERS, embedder, load_set
from kioku._embeddings import embedding_text
from kioku._errors import ConfigurationError, one_line


def queries() -> list[str]:
    """The set's short queries, as searches embed them."""
    found: list[str] = []
    for data in load_set().values():
        for fact in data["facts"]:
            found += [fact["literal"], fact["paraphrase"]]
        found += data["absent"]
    return [embedding_text(query) for query in found]


def measure(kind: str, texts: Sequence[str], rounds: int) -> str:
    """One line of figures for embedder ``kind`` (or why it was skipped)."""
    try:
        spec = embedder(kind)
    except ConfigurationError as exc:
        return f"{kind:<13} skipped ({one_line(exc)})"
    started = time.perf_counter()
    spec.embeddings.embed_query(texts[0])
    first_ms = (time.perf_counter() - started) * 1000
    for text in texts[:20]:
        spec.embeddings.embed_query(text)
    walls: list[float] = []
    cpu_started = time.process_time()
    for _ in range(rounds):
        for text in texts:
            started = time.perf_counter()
            spec.embeddings.embed_query(text)
            walls.append((time.perf_counter() - started) * 1000)
    cpu_ms = (time.process_time() - cpu_started) * 1000 / len(walls)
    return (
        f"{kind:<13} {spec.model:<40} {first_ms:8.0f} {percentile(walls, 0.5):7.2f} "
        f"{percentile(walls, 0.95):7.2f} {cpu_ms:7.2f}"
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Print one line per embedder."""
    parser = argparse.ArgumentParser(prog="python -m bench.embed_latency", description=__doc__)
    parser.add_argument("--embedder", choices=[*EMBEDDERS, "all"], default="all")
    parser.add_argument("--rounds", type=int, default=3, help="passes over the queries")
    args = parser.parse_args(argv)
    texts = queries()
    kinds = EMBEDDERS if args.embedder == "all" else (args.embedder,)
    load_before = os.getloadavg()[0]
    print(f"{len(texts)} queries x {args.rounds}, {os.cpu_count()} CPUs")
    print(
        f"{'embedder':<13} {'model':<40} {'first ms':>8} {'p50 ms':>7} {'p95 ms':>7} {'cpu ms':>7}"
    )
    for kind in kinds:
        print(measure(kind, texts, args.rounds))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"peak RSS {peak:.0f} MB; load average (1 min) before {load_before:.2f}, "
        f"after {os.getloadavg()[0]:.2f}"
    )


if __name__ == "__main__":
    main()
