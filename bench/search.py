"""Search and write benchmarks at scale (issue #5), beside LangGraph's PostgresStore.

Per scale (10k, 100k memories of MSC persona sentences, hashing embedder, 384-d), in
one database and one run:
- kioku hybrid search p50/p95 (query embedding excluded) inside a 5% scope, and the
  vector part's recall@10 against exact search;
- PostgresStore's search of the same queries in the same scope (a namespace), p50/p95
  and recall@10 against the same exact results;
- write throughput: kioku's tool path (create_long_term_memory flow: validation, limit
  check under an advisory lock, insert + history; embedding excluded) vs PostgresStore.put.

Run: .venv/bin/python -m bench.search [--scales 10000 100000] [--queries 100]
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings
from langgraph.store.postgres import PostgresStore
from sqlalchemy import insert, select, text

from bench.common import bench_database, open_store, timed_ms
from toolkit import Participant, Persona, TurnContext
from toolkit.db.engine import libpq_url
from toolkit.db.models import Memory, Server
from toolkit.embeddings import EmbedderSpec, HashingEmbeddings
from toolkit.memory.create import create_long_term_memory
from toolkit.search.engine import hybrid_search, vector_candidates
from toolkit.search.query import Visibility
from toolkit.stm.model import utc_now

DATA = Path(__file__).resolve().parents[2] / "shared" / "bench-data" / "msc_personas_all.json"
SERVERS = 20  # each scope holds 5% of the memories
LINEAGE = 10_000
DIM = 384


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
    """``count`` persona sentences (numbered once the data runs out, so all differ)."""
    data = json.loads(DATA.read_text())
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


def recall(found: Sequence[Any], truth: Sequence[Any]) -> float:
    """Share of ``truth`` in ``found``."""
    return len(set(found) & set(truth)) / max(1, len(truth))


def run_scale(scale: int, queries: int, hashing: HashingEmbeddings, report: dict[str, Any]) -> None:
    """Load ``scale`` memories into kioku and PostgresStore, then measure both."""
    texts = sentences(scale + queries)
    corpus, questions = texts[:scale], texts[scale:]
    vectors = dict(zip(texts, hashing.embed_documents(texts), strict=True))
    lookup = EmbedderSpec(Lookup(vectors, hashing), f"hashing-{DIM}", DIM)
    name = f"kioku_bench_search_{scale}"
    with bench_database(name) as url:
        store = open_store(url, lookup, max_server_memories=10**9)
        t0 = time.perf_counter()
        with store.transaction() as session:
            session.execute(
                insert(Server), [{"id": f"s{i}", "name": f"s{i}"} for i in range(SERVERS)]
            )
            for start in range(0, scale, 5000):
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
                        for i in range(start, min(scale, start + 5000))
                    ],
                )
        with store.engine.begin() as connection:
            connection.execute(text("ANALYZE memories"))
        load_s = time.perf_counter() - t0

        # --- PostgresStore with the same items, one namespace per scope
        peer_conn = libpq_url(store.engine)
        with PostgresStore.from_conn_string(
            peer_conn, index={"dims": DIM, "embed": lookup.embeddings, "fields": ["text"]}
        ) as peer:
            peer.setup()
            t1 = time.perf_counter()
            for start in range(0, scale, 1000):
                from langgraph.store.base import PutOp

                peer.batch(
                    [
                        PutOp(("server", f"s{i % SERVERS}"), str(i), {"text": corpus[i]})
                        for i in range(start, min(scale, start + 1000))
                    ]
                )
            peer_load_s = time.perf_counter() - t1

            rng = random.Random(scale)
            probes = [(rng.randrange(SERVERS), q) for q in questions]
            ids_by_content = {}
            with store.sessions() as session:
                for memory_id, content in session.execute(select(Memory.id, Memory.content)):
                    ids_by_content[content] = memory_id
            key_of = {
                memory_id: str(i) for i, c in enumerate(corpus) for memory_id in [ids_by_content[c]]
            }

            kioku_recall, peer_recall, peer_short = [], [], 0
            for server, question in probes:
                scope = Visibility(f"s{server}", LINEAGE)
                qv = vectors[question]
                with store.sessions() as session:
                    truth = list(
                        session.scalars(
                            select(Memory.id)
                            .where(scope.condition())
                            .order_by(Memory.embedding.cosine_distance(qv) + 0)
                            .limit(10)
                        )
                    )
                    got = vector_candidates(session, scope, qv, memory_type=None, limit=10)
                kioku_recall.append(recall(got, truth))
                items = peer.search(("server", f"s{server}"), query=question, limit=10)
                peer_short += len(items) < 10
                peer_recall.append(recall([i.key for i in items], [key_of[t] for t in truth]))

            cycle = iter(probes * 100)

            def kioku_search() -> None:
                server, question = next(cycle)
                with store.sessions() as session:
                    hybrid_search(
                        session,
                        Visibility(f"s{server}", LINEAGE),
                        question,
                        vectors[question],
                        now=utc_now(),
                        limit=10,
                    )

            def peer_search() -> None:
                server, question = next(cycle)
                peer.search(("server", f"s{server}"), query=question, limit=10)

            kioku_lat = timed_ms(kioku_search, queries * 2)
            peer_lat = timed_ms(peer_search, queries * 2)

            # --- writes: kioku's tool path vs PostgresStore.put (embedding excluded for both)
            persona = Persona(1, "Kioku", LINEAGE)
            user = Participant("bench-user", "Bench")
            with store.accounts() as accounts:
                accounts.upsert_server("w", "writes", self_teaching_enabled=True)
            writes = [f"write benchmark fact {i}: {corpus[i % scale]}" for i in range(1000)]
            for w in writes:
                vectors[w] = hashing.embed_query(w)
            t2 = time.perf_counter()
            for content in writes:
                context = TurnContext(
                    server_id="w",
                    channel_id="c",
                    user=user,
                    persona=persona,
                    bot_user_id="b",
                    participants=(user,),
                )
                with store.sessions() as session:
                    result = create_long_term_memory(
                        session,
                        store,
                        context,
                        {"memory_content": content, "memory_scope": "server_wide"},
                    )
                assert result.status == "memory_saved_successfully", result
            kioku_writes = len(writes) / (time.perf_counter() - t2)
            t3 = time.perf_counter()
            for i, content in enumerate(writes):
                peer.put(("writes",), f"w{i}", {"text": content})
            peer_writes = len(writes) / (time.perf_counter() - t3)
        store.close()
    report[str(scale)] = {
        "load_seconds": {"kioku": round(load_s, 1), "postgres_store": round(peer_load_s, 1)},
        "search_ms": {
            "kioku_p50": kioku_lat[0],
            "kioku_p95": kioku_lat[1],
            "postgres_store_p50": peer_lat[0],
            "postgres_store_p95": peer_lat[1],
        },
        "recall_at_10": {
            "kioku": sum(kioku_recall) / len(kioku_recall),
            "postgres_store": sum(peer_recall) / len(peer_recall),
            "postgres_store_short_results": peer_short,
        },
        "writes_per_second": {"kioku_tool_path": kioku_writes, "postgres_store_put": peer_writes},
    }
    r = report[str(scale)]
    print(f"\n{scale:,} memories, {SERVERS} scopes of 5%, {queries} queries")
    print(
        f"  search p50/p95 ms   kioku {kioku_lat[0]:.2f}/{kioku_lat[1]:.2f}   "
        f"PostgresStore {peer_lat[0]:.2f}/{peer_lat[1]:.2f}   "
        f"ratio p95 {peer_lat[1] / kioku_lat[1]:.2f}x"
    )
    print(
        f"  recall@10 vs exact  kioku {r['recall_at_10']['kioku']:.3f}   "
        f"PostgresStore {r['recall_at_10']['postgres_store']:.3f} "
        f"({peer_short} of {len(probes)} queries returned < 10)"
    )
    print(
        f"  writes/s            kioku {kioku_writes:.0f}   PostgresStore {peer_writes:.0f}   "
        f"ratio {kioku_writes / peer_writes:.2f}x"
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
