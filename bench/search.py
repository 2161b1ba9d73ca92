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
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings
from langgraph.store.base import PutOp
from langgraph.store.postgres import PostgresStore
from sqlalchemy import insert, select, text

from bench.common import (
    analyze_store,
    bench_data,
    bench_database,
    libpq,
    open_store,
    percentile,
    prepare_database,
)
from kioku import KiokuStore, Participant, Persona, TurnContext
from kioku._db.models import Memory, Server
from kioku._db.vectors import HNSW_INDEXES
from kioku._domain.visibility import Visibility
from kioku._embeddings import EmbedderSpec, HashingEmbeddings
from kioku._memory.create import create_long_term_memory
from kioku._search.candidates import vector_candidates
from kioku._search.engine import rank_candidates
from kioku._search.query import scope_condition
from kioku._stm.model import utc_now

PERSONAS = "msc_personas_all.json"
SERVERS = 20  # each scope holds 5% of the memories
LINEAGE = 10_000
DIM = 384
ROUNDS = 5
TURNS_PER_ROUND = 5
"""Turns each contender takes before the next one's: short rounds, so the machine's slow
spells fall on every contender alike."""

ALWAYS_EXACT = 10**12
"""``exact_max_rows`` that keeps every scope on the exact scan (kioku's exact contender)."""


class Lookup(Embeddings):
    """Precomputed vectors: keeps embedding cost out of write and search timings."""

    def __init__(self, vectors: dict[str, list[float]], fallback: Embeddings) -> None:
        self.vectors, self.fallback = vectors, fallback

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Look the vectors up."""
        return [self.vectors.get(t) or self.fallback.embed_query(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        """Look one vector up."""
        return self.embed_documents([text])[0]


def sentences(count: int) -> list[str]:
    """``count`` persona sentences (numbered once the data runs out, so all differ).

    Without the MSC data (``KIOKU_BENCH_DATA``), generated sentences stand in for them.
    """
    path = bench_data(PERSONAS)
    if path is None:
        return [synthetic_sentence(i) for i in range(count)]
    data = json.loads(path.read_text())
    pool = [
        s
        for split in data.values()
        for pair in split
        for side in pair.values()
        if isinstance(side, list)
        for s in side
    ]
    unique = list(dict.fromkeys(pool))
    return [unique[i % len(unique)] + ("" if i < len(unique) else f" ({i})") for i in range(count)]


def data_source() -> str:
    """Which sentences the benchmarks use."""
    path = bench_data(PERSONAS)
    return f"MSC persona sentences ({path})" if path else "generated persona-like sentences"


_SUBJECTS = ("tea", "hiking", "jazz", "gardening", "chess", "cooking", "cycling", "poetry")
_VERBS = ("loves", "avoids", "teaches", "collects books about", "dreams of", "writes about")


def synthetic_sentence(i: int) -> str:
    """A persona-like sentence, different for every ``i``."""
    rng = random.Random(i)
    return (
        f"Person {i % 997} {rng.choice(_VERBS)} {rng.choice(_SUBJECTS)} "
        f"and {rng.choice(_SUBJECTS)} since {1950 + i % 70} ({i})"
    )


def recall(found: Sequence[Any], truth: Sequence[Any]) -> float:
    """Share of ``truth`` in ``found``."""
    return len(set(found) & set(truth)) / max(1, len(truth))


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
        ext = prepare_database(url, ["search_flat", "search_hnsw"])
        with ExitStack() as stack:
            peers = {}
            for kind in ("flat", "hnsw"):
                peer = stack.enter_context(
                    PostgresStore.from_conn_string(
                        libpq(url, f"search_{kind}", ext),
                        index={
                            "dims": DIM,
                            "embed": lookup.embeddings,
                            "fields": ["text"],
                            "ann_index_config": {"kind": kind, "vector_type": "halfvec"},
                            "distance_type": "cosine",
                        },
                    )
                )
                peer.setup()
                peers[kind] = peer
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

    recalls: dict[str, list[float]] = {
        "kioku": [],
        "kioku_hnsw": [],
        "postgres_store_flat": [],
        "postgres_store_hnsw": [],
    }
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
            found = vector_candidates(
                session, scope, qv, memory_type=None, limit=10, exact_max_rows=ALWAYS_EXACT
            )
            hnsw = vector_candidates(
                session, scope, qv, memory_type=None, limit=10, exact_max_rows=0
            )
        recalls["kioku"].append(recall(found, truth))
        recalls["kioku_hnsw"].append(recall(hnsw, truth))
        for name, peer in (("postgres_store_flat", flat), ("postgres_store_hnsw", hnsw_peer)):
            items = peer.search(("server", server), query=question, limit=10)
            peer_short += name.endswith("hnsw") and len(items) < 10
            recalls[name].append(recall([i.key for i in items], [key_of[t] for t in truth]))

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

    def kioku_exact_vector() -> None:
        server, question = next(cycle)
        with store.sessions() as session:
            vector_candidates(
                session,
                Visibility(server, LINEAGE),
                vectors[question],
                memory_type=None,
                limit=10,
                exact_max_rows=ALWAYS_EXACT,
            )

    def kioku_hnsw_vector() -> None:
        server, question = next(cycle)
        with store.sessions() as session:
            vector_candidates(
                session,
                Visibility(server, LINEAGE),
                vectors[question],
                memory_type=None,
                limit=10,
                exact_max_rows=0,
            )

    def peer_search(peer: PostgresStore) -> Callable[[], object]:
        def run() -> None:
            server, question = next(cycle)
            peer.search(("server", server), query=question, limit=10)

        return run

    searches = Rounds.run(
        {
            "kioku_hybrid": kioku_search,
            "kioku_exact_vector": kioku_exact_vector,
            "postgres_store_flat": peer_search(flat),
            "kioku_hnsw_vector": kioku_hnsw_vector,
            "postgres_store_hnsw": peer_search(hnsw_peer),
        },
        per_round=len(probes) // 2,
    )
    kioku_writes, peer_writes = write_rounds(store, flat, hnsw_peer, writes, writes_per_round)
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


def write_rounds(
    store: KiokuStore,
    flat: PostgresStore,
    hnsw_peer: PostgresStore,
    writes: list[str],
    per_round: int,
) -> tuple[dict[str, float], dict[str, float]]:
    """Tool-path writes with and without kioku's HNSW index, beside the matching peer."""
    persona = Persona(1, "Kioku", LINEAGE)
    user = Participant("bench-user", "Bench")
    with store.accounts() as accounts:
        for name in ("w-hnsw", "w-exact"):
            accounts.upsert_server(name, "writes", self_teaching_enabled=True)
    pending = iter(writes)
    peer_keys = iter(range(10**9))

    def kioku_write(server: str) -> Callable[[], object]:
        context = TurnContext(
            server_id=server,
            channel_id="c",
            user=user,
            persona=persona,
            bot_user_id="b",
            participants=(user,),
        )

        def write() -> None:
            with store.sessions() as session:
                result = create_long_term_memory(
                    session,
                    store,
                    context,
                    {"memory_content": next(pending), "memory_scope": "server_wide"},
                )
            assert result.status == "memory_saved_successfully", result

        return write

    def peer_put(peer: PostgresStore) -> Callable[[], object]:
        def put() -> None:
            key = next(peer_keys)
            peer.put(("writes",), f"w{key}", {"text": writes[key % len(writes)]})

        return put

    with_index = Rounds.run(
        {"kioku": kioku_write("w-hnsw"), "peer": peer_put(hnsw_peer)}, per_round
    )
    with store.engine.begin() as connection:
        for index in HNSW_INDEXES.values():  # what limits <= 2,000 give you
            connection.execute(text(f"DROP INDEX IF EXISTS {index}"))
    without_index = Rounds.run({"kioku": kioku_write("w-exact"), "peer": peer_put(flat)}, per_round)
    return {
        "kioku_tool_path_with_hnsw": with_index.per_second("kioku"),
        "kioku_tool_path_without_hnsw": without_index.per_second("kioku"),
    }, {
        "postgres_store_hnsw_put": with_index.per_second("peer"),
        "postgres_store_flat_put": without_index.per_second("peer"),
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
