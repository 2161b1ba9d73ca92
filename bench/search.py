"""Search and write benchmarks at scale (issue #5), beside LangGraph's PostgresStore.

Per scale (10k, 100k memories of MSC persona sentences, hashing embedder, 384-d), in
one database and one run:
- search p50/p95 (query embedding excluded) inside a 5% scope: kioku's hybrid search
  and PostgresStore's vector search of the same queries in the same scope (a namespace);
- recall@10 against exact search: kioku's vector candidates (exact up to 2,000 rows per
  scope, the default), kioku forced through its HNSW index, and PostgresStore;
- write throughput: kioku's tool path (``create_long_term_memory``: validation, settings,
  limit check under an advisory lock, insert + history; embedding excluded) with and
  without the HNSW index, vs ``PostgresStore.put`` (embedding excluded too).

Timings alternate between kioku and the peer in rounds, so a noisy neighbour (this
machine shares its CPUs) slows both alike.

Run: .venv/bin/python -m bench.search [--scales 10000 100000] [--queries 100]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from langgraph.store.base import PutOp
from langgraph.store.postgres import PostgresStore
from sqlalchemy import insert, select, text

from bench.common import (
    analyze_store,
    bench_database,
    libpq,
    open_store,
    prepare_database,
)
from bench.corpus import DIM, Lookup, sentences
from bench.peers_store import open_store as open_peer_store
from bench.peers_store import store_index
from bench.rounds import ROUNDS, Rounds
from bench.search_writes import write_rounds
from kioku import KiokuStore, Persona
from kioku._db.models import Memory, Server
from kioku._domain.visibility import Visibility
from kioku._embeddings import EmbedderSpec, HashingEmbeddings
from kioku._search.candidates import vector_candidates
from kioku._search.engine import rank_candidates
from kioku._search.query import scope_condition
from kioku._stm.model import utc_now

SERVERS = 20  # each scope holds 5% of the memories
LINEAGE = 10_000
KINDS = ("flat", "hnsw")
"""PostgresStore's two index kinds, each a peer in a schema of its own."""

Probe = tuple[str, str]
"""A server whose scope is searched, and the question."""

ALWAYS_EXACT = 10**12
"""``exact_max_rows`` that keeps every scope on the exact scan (kioku's exact contender)."""


def recall(found: Sequence[Any], truth: Sequence[Any]) -> float:
    """Share of ``truth`` in ``found``."""
    return len(set(found) & set(truth)) / max(1, len(truth))


def load_kioku(store: KiokuStore, corpus: list[str], vectors: dict[str, list[float]]) -> None:
    """Bulk-load ``corpus`` into SERVERS scopes, then let autovacuum's work happen now."""
    with store.transaction() as session:
        session.execute(insert(Server), [{"id": f"s{i}", "name": f"s{i}"} for i in range(SERVERS)])
        for start in range(0, len(corpus), 5000):
            session.execute(
                insert(Memory),
                [
                    {
                        "scope": "server",
                        "server_id": f"s{i % SERVERS}",
                        "persona_lineage_id": LINEAGE,
                        "content": corpus[i],
                        "embedding": vectors[corpus[i]],
                    }
                    for i in range(start, min(len(corpus), start + 5000))
                ],
            )
    autocommit = store.engine.execution_options(isolation_level="AUTOCOMMIT")
    with autocommit.connect() as connection:
        connection.execute(text("VACUUM ANALYZE memories"))


def load_peer(peer: PostgresStore, corpus: list[str]) -> None:
    """The same items in PostgresStore, one namespace per scope."""
    for start in range(0, len(corpus), 1000):
        peer.batch(
            [
                PutOp(("server", f"s{i % SERVERS}"), str(i), {"text": corpus[i]})
                for i in range(start, min(len(corpus), start + 1000))
            ]
        )


@contextmanager
def open_peer(url: str, ext: str, kind: str, lookup: EmbedderSpec) -> Iterator[PostgresStore]:
    """A PostgresStore in schema ``search_{kind}``: halfvec, cosine, index ``kind``."""
    index = store_index(DIM, kind, lookup.embeddings, "text")
    with open_peer_store(libpq(url, f"search_{kind}", ext), index) as peer:
        yield peer


def run_scale(
    scale: int,
    queries: int,
    hashing: HashingEmbeddings,
    report: dict[str, Any],
    *,
    writes_per_round: int = 100,
    show: bool = True,
) -> None:
    """Load ``scale`` memories into kioku and PostgresStore, then measure both."""
    texts = sentences(scale + queries)
    corpus, questions = texts[:scale], texts[scale:]
    writes = [
        f"write benchmark fact {i}: {corpus[i % scale]}"
        for i in range((ROUNDS * writes_per_round + 10) * 2)
    ]
    vectors = dict(zip(texts + writes, hashing.embed_documents(texts + writes), strict=True))
    lookup = EmbedderSpec(Lookup(vectors, hashing), f"hashing-{DIM}", DIM)
    with bench_database(f"kioku_bench_search_{scale}") as url:
        # Limits far above 2,000 per scope: kioku builds its HNSW index ("auto").
        store = open_store(url, lookup, max_server_memories=10**9, vector_index="exact")
        t0 = time.perf_counter()
        load_kioku(store, corpus, vectors)
        store.close()
        store = open_store(url, lookup, max_server_memories=10**9)  # builds the HNSW index
        load_s = time.perf_counter() - t0
        ext = prepare_database(url, [f"search_{kind}" for kind in KINDS])
        with ExitStack() as stack:
            peers = {kind: stack.enter_context(open_peer(url, ext, kind, lookup)) for kind in KINDS}
            t1 = time.perf_counter()
            for peer in peers.values():
                load_peer(peer, corpus)
            for kind in peers:
                analyze_store(libpq(url, f"search_{kind}", ext))
            peer_load_s = time.perf_counter() - t1
            result = measure(
                store,
                peers["flat"],
                peers["hnsw"],
                corpus,
                questions,
                vectors,
                writes,
                writes_per_round,
            )
        store.close()
    result["load_seconds"] = {"kioku": round(load_s, 1), "postgres_store": round(peer_load_s, 1)}
    report[str(scale)] = result
    if show:
        print_scale(scale, queries, result)


def measure(
    store: KiokuStore,
    flat: PostgresStore,
    hnsw_peer: PostgresStore,
    corpus: list[str],
    questions: list[str],
    vectors: dict[str, list[float]],
    writes: list[str],
    writes_per_round: int,
) -> dict[str, Any]:
    """Recall, search latency and write throughput of kioku and the peers, like for like.

    kioku's exact vector search (within a scope, halfvec) beside PostgresStore with a flat
    (no) index on halfvec; kioku's vector search forced through its HNSW index beside
    PostgresStore's HNSW on halfvec; kioku's hybrid search on its own. Writes: kioku
    without its HNSW index beside the flat peer's puts, with it beside the HNSW peer's.
    """
    rng = random.Random(len(corpus))
    probes = [(f"s{rng.randrange(SERVERS)}", q) for q in questions]
    with store.sessions() as session:
        ids = {
            content: memory_id
            for content, memory_id in session.execute(select(Memory.content, Memory.id))
        }
    key_of = {ids[content]: str(i) for i, content in enumerate(corpus)}
    peers = {"flat": flat, "hnsw": hnsw_peer}
    recalls, peer_short = recalls_at_10(store, peers, probes, vectors, key_of)
    searches = Rounds.run(
        search_contenders(store, flat, hnsw_peer, probes, vectors), per_round=len(probes) // 2
    )
    kioku_writes, peer_writes = write_rounds(
        store, flat, hnsw_peer, writes, writes_per_round, Persona(1, "Kioku", LINEAGE)
    )
    return {
        "search_ms": {
            f"{name}_{q}": getattr(searches, q)(name)
            for name in searches.samples
            for q in ("p50", "p95")
        },
        "recall_at_10": {
            **{name: statistics.mean(values) for name, values in recalls.items()},
            "postgres_store_short_results": peer_short,
            "queries": len(probes),
        },
        "writes_per_second": {**kioku_writes, **peer_writes},
    }


def recalls_at_10(
    store: KiokuStore,
    peers: dict[str, PostgresStore],
    probes: list[Probe],
    vectors: dict[str, list[float]],
    key_of: dict[int, str],
) -> tuple[dict[str, list[float]], int]:
    """Each contender's recall@10 of every probe against the exact nearest 10.

    Also how many of the HNSW peer's searches came back with fewer than 10 items.
    """
    recalls: dict[str, list[float]] = {"kioku": [], "kioku_hnsw": []}
    recalls |= {f"postgres_store_{kind}": [] for kind in peers}
    peer_short = 0
    for server, question in probes:
        scope, qv = Visibility(server, LINEAGE), vectors[question]
        with store.sessions() as session:
            truth = list(
                session.scalars(
                    select(Memory.id)
                    .where(scope_condition(scope))
                    .order_by(Memory.embedding.cosine_distance(qv) + 0, Memory.id)
                    .limit(10)
                )
            )
            for name, exact_max_rows in (("kioku", ALWAYS_EXACT), ("kioku_hnsw", 0)):
                found = vector_candidates(
                    session, scope, qv, memory_type=None, limit=10, exact_max_rows=exact_max_rows
                )
                recalls[name].append(recall(found, truth))
        for kind, peer in peers.items():
            items = peer.search(("server", server), query=question, limit=10)
            peer_short += kind == "hnsw" and len(items) < 10
            recalls[f"postgres_store_{kind}"].append(
                recall([i.key for i in items], [key_of[t] for t in truth])
            )
    return recalls, peer_short


def search_contenders(
    store: KiokuStore,
    flat: PostgresStore,
    hnsw_peer: PostgresStore,
    probes: list[Probe],
    vectors: dict[str, list[float]],
) -> dict[str, Callable[[], object]]:
    """One search each, through the probes in turn (shared, so every contender asks alike)."""
    cycle = iter(probes * 1000)

    def kioku_search() -> None:  # as search_long_term_memory runs it
        server, question = next(cycle)
        with store.reads() as session:
            rank_candidates(
                session,
                Visibility(server, LINEAGE),
                question,
                vectors[question],
                now=utc_now(),
                limit=10,
                aids=store.search_aids,
            ).hits()

    def kioku_vector(exact_max_rows: int) -> Callable[[], object]:
        def run() -> None:
            server, question = next(cycle)
            with store.sessions() as session:
                vector_candidates(
                    session,
                    Visibility(server, LINEAGE),
                    vectors[question],
                    memory_type=None,
                    limit=10,
                    exact_max_rows=exact_max_rows,
                )

        return run

    def peer_search(peer: PostgresStore) -> Callable[[], object]:
        def run() -> None:
            server, question = next(cycle)
            peer.search(("server", server), query=question, limit=10)

        return run

    return {
        "kioku_hybrid": kioku_search,
        "kioku_exact_vector": kioku_vector(ALWAYS_EXACT),
        "postgres_store_flat": peer_search(flat),
        "kioku_hnsw_vector": kioku_vector(0),
        "postgres_store_hnsw": peer_search(hnsw_peer),
    }


def print_scale(scale: int, queries: int, r: dict[str, Any]) -> None:
    """One block of figures for ``scale``."""
    s, rc, w = r["search_ms"], r["recall_at_10"], r["writes_per_second"]
    print(f"\n{scale:,} memories, {SERVERS} scopes of 5%, {queries} queries")
    for name in (
        "kioku_exact_vector",
        "postgres_store_flat",
        "kioku_hnsw_vector",
        "postgres_store_hnsw",
        "kioku_hybrid",
    ):
        print(f"  search p50/p95 ms  {name:<22} {s[name + '_p50']:.2f}/{s[name + '_p95']:.2f}")
    print(
        "  recall@10 vs exact "
        + "   ".join(f"{k} {v:.3f}" for k, v in rc.items() if isinstance(v, float))
    )
    print(
        f"  writes/s  kioku (no HNSW) {w['kioku_tool_path_without_hnsw']:.0f} vs flat peer "
        f"{w['postgres_store_flat_put']:.0f};  kioku (HNSW) {w['kioku_tool_path_with_hnsw']:.0f}"
        f" vs HNSW peer {w['postgres_store_hnsw_put']:.0f}"
    )


def main() -> None:
    """Run each scale and print (and save) the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scales", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--json", type=Path, default=Path("bench/search-results.json"))
    args = parser.parse_args()
    report: dict[str, Any] = {}
    hashing = HashingEmbeddings(DIM)
    for scale in args.scales:
        run_scale(scale, args.queries, hashing, report)
    args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
