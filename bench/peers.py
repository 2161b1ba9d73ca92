"""Fair peers for the per-turn benchmark (issue #13): the same turn, done with other tools.

kioku's turn (``kioku_turn`` in bench/turn_scenario.py): intent gate, context build (the
server's memories, each participant's personal memories, relevance retrieval when a block
overflows, this channel's and other channels' short-term memory, rendering, token
counting), one memory update through the tool path, and capture of the user message and
the reply into short-term memory. Each peer below (built in bench/peers_store.py,
peers_mem0.py and peers_raw.py) does the equivalent work per turn the way a competent user
of its library would set it up. Query and document embeddings are precomputed for every
peer (lookups), as for kioku; token counts use kioku's cached cl100k counter line by line.
Every contender's tables are analysed after loading, as autovacuum soon would.

``postgres_store_flat`` — LangGraph ``PostgresStore``, halfvec vectors, no ANN index (exact
search, as kioku searches a scope up to 2,000 memories). Per turn, one ``store.batch`` of
reads: a vector search (limit 10) of the server's namespace and of each participant's, a
get of this channel's short-term entry and a listing of the 4 newest other-channel entries;
the results rendered into a prompt and its tokens counted; then one ``store.batch`` of
writes: a put of the updated memory (re-embedded, lookup) and puts of the two short-term
entries (the channel's and the speaker's), each keeping the last 20 messages.

``postgres_store_hnsw`` — the same with an HNSW index on halfvec (as kioku uses for scopes
beyond 2,000 memories). PostgresStore filters the namespace after the index scan, so small
namespaces may come back with fewer than 10 results at scale (see ``Peers.found``).

``langmem`` — LangMem 0.0.30's tools over a PostgresStore (halfvec, flat, field
``content``, LangMem's value shape): ``create_search_memory_tool`` on
``("memories", server_id)`` and on ``("memories", "{langgraph_user_id}")`` invoked for the
server and for each participant (limit 10); the results rendered and counted;
``create_manage_memory_tool`` with ``action="update"`` and the memory's id for the speaker;
then short-term memory as LangGraph keeps it: a ``MessagesState`` graph compiled with
``PostgresSaver`` (same database), invoked once with the user message, its one node
appending the assistant reply (no LLM) and removing messages beyond the last 20.
LangGraph threads are per channel; it does not read other channels' short-term memory.

``mem0`` — Mem0 OSS 2.2.1, pgvector on the same database (its defaults: ``vector`` column,
HNSW index), the same embeddings through its ``langchain`` embedder, telemetry off, no LLM
call (memories loaded as ``add(infer=False)`` stores them, written directly in bulk).
Per turn: ``Memory.search`` (top_k 10, threshold 0 so that all 10 hits come back as for the
other peers) with ``filters={"agent_id": server_id}`` and with
``filters={"user_id": ...}`` for each participant (mem0 runs a vector and a keyword query
for each; without spaCy it neither lemmatizes nor extracts entities), rendered and counted;
``Memory.update(memory_id, text=...)`` (reads the row, updates vector and payload, writes
its SQLite history); then the same ``PostgresSaver`` graph as the LangMem peer. mem0's
vector query filters its jsonb payload after the HNSW scan (no iterative scan), so once the
planner uses the index (e.g. 100,000 server memories) small scopes come back empty: the
turn renders fewer memories (``Peers.found``).

``raw_sql_floor`` — hand-written SQL doing the SQL work of kioku's turn, over one psycopg
connection (pipeline mode, each transaction an explicit BEGIN ... COMMIT sent with its
statements) on a kioku-like ``memories`` table (halfvec, importance, a stored English
``tsvector`` with a GIN index, same rows) in its own schema, HNSW index only when a scope
exceeds 2,000 rows (as kioku). Per turn, one pipelined read transaction: the server's
settings row, the newest 50 of the server's memories, the newest 50 of each
participant's (one LATERAL query), a hybrid ranking of the server's memories and one of
the participants' (each: the 100 nearest by vector, exact or HNSW with iterative scan at
scale, and the 100 best ``ts_rank_cd`` matches of any query word; ids, content,
importance and time), this channel's short-term entry and the 4 newest other-channel
entries; the rankings fused in Python (reciprocal rank fusion with importance), their
best 50 merged with each window, rendered and counted; then the tool's pipelined write
transaction (a history row and the memory's update), and the capture's (upserts of the
two short-term entries: jsonb, appending in SQL and keeping the last 20). They are two
transactions, each committed before the next step, as in every other contender's turn:
the tool's write is done, and its answer back, before the model replies, and the
capture saves that reply. Nothing is cached between turns. This is the floor kioku's
turn is compared with (the issue's "raw psycopg doing the same SQL work").

``raw_sql_vector_floor`` — the floor as it was until the same SQL work was asked of it, for
reference: the same tables and statements, but its retrieval is the server's 10 nearest
by vector alone (no text search, no ranking of personal memories, no settings), and the
tool's write and the capture share one transaction (one commit, one round trip).

Run: .venv/bin/python -m bench.peers [--which raw_sql_floor langmem] [--turns 100]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any

from bench.common import prepare_database
from bench.corpus import DIM, Lookup, sentences
from bench.peer_data import SCHEMAS, STM_SCHEMA, PeerData, Peers
from bench.peers_mem0 import build_mem0
from bench.peers_raw import build_raw
from bench.peers_store import build_langmem, build_store_peer
from bench.rounds import Rounds, numbered
from kioku._embeddings import HashingEmbeddings

PEERS = (
    "postgres_store_flat",
    "postgres_store_hnsw",
    "langmem",
    "mem0",
    "raw_sql_floor",
    "raw_sql_vector_floor",
)
"""Every peer, in the order they are built and timed."""


def build_peers(
    data: PeerData,
    *,
    which: Sequence[str] = PEERS,
    connect_url: str | None = None,
    load: bool = True,
) -> Peers:
    """Load ``data`` into each peer in ``which`` and open its connections.

    Args:
        data: The memories, questions and speaker.
        which: Peers to build (names from ``PEERS``).
        connect_url: SQLAlchemy URL the turns' connections use instead of ``data.url``
            (e.g. a ``RoundTripProxy``'s, to count round trips); loading uses ``data.url``.
        load: Load the data (``False`` when an earlier build on this database did).

    Returns:
        The peers; one that cannot be built is in ``skipped`` with the reason.
    """
    unknown = set(which) - set(PEERS)
    if unknown:
        raise ValueError(f"unknown peers: {sorted(unknown)}")
    ext = prepare_database(data.url, [*SCHEMAS.values(), STM_SCHEMA])
    conn = connect_url or data.url
    peers = Peers()
    builders: dict[str, Callable[[], None]] = {
        "postgres_store_flat": lambda: build_store_peer(
            peers, data, "postgres_store_flat", "flat", conn, ext, load
        ),
        "postgres_store_hnsw": lambda: build_store_peer(
            peers, data, "postgres_store_hnsw", "hnsw", conn, ext, load
        ),
        "langmem": lambda: build_langmem(peers, data, conn, ext, load),
        "mem0": lambda: build_mem0(peers, data, conn, ext, load),
        "raw_sql_floor": lambda: build_raw(peers, data, conn, ext, load, same_work=True),
        "raw_sql_vector_floor": lambda: build_raw(peers, data, conn, ext, load, same_work=False),
    }
    try:
        for name in PEERS:
            if name not in which:
                continue
            try:
                builders[name]()
            except ImportError as exc:
                peers.skipped[name] = f"not installed ({exc}); pip install -e '.[bench]'"
    except BaseException:
        peers.close()
        raise
    return peers


def count_round_trips(peers: Peers, reset: Callable[[], int], turns: int = 3) -> dict[str, int]:
    """Round trips of one turn of each peer, after ``turns`` warm-up turns.

    ``peers`` must have been built with ``connect_url`` a ``RoundTripProxy``'s URL and
    ``reset`` that proxy's ``reset``. Background work (mem0's pool, LangGraph's async
    checkpoint writes) finishes inside the turn, so it is counted with it.
    """
    counts: dict[str, int] = {}
    for name, turn in peers.turns.items():
        for i in range(turns):
            turn(10_000 + i)
        reset()
        turn(10_000 + turns)
        counts[name] = reset()
    return counts


def measure(
    data: PeerData, which: Sequence[str] = PEERS, turns: int = 100, *, round_trips: bool = True
) -> dict[str, Any]:
    """p50/p95 (ms) of each peer's turn in alternating rounds, and its round trips per turn.

    Returns:
        ``{"peers": {name: {"p50_ms", "p95_ms", "round_trips", "found"}}, "skipped": {...}}``.
    """
    from bench.roundtrips import RoundTripProxy

    report: dict[str, Any] = {"peers": {}, "skipped": {}}
    peers = build_peers(data, which=which)
    try:
        report["skipped"] = dict(peers.skipped)
        step = iter(range(10**9))
        contenders = {name: numbered(turn, step) for name, turn in peers.turns.items()}
        rounds = Rounds.of_turns(contenders, turns)
        for name in peers.turns:
            report["peers"][name] = {
                "p50_ms": rounds.p50(name),
                "p95_ms": rounds.p95(name),
                "found": peers.found.get(name),
            }
    finally:
        peers.close()
    if round_trips and report["peers"]:
        proxy = RoundTripProxy(data.url)
        counted = build_peers(data, which=list(report["peers"]), connect_url=proxy.url, load=False)
        try:
            for name, count in count_round_trips(counted, proxy.reset).items():
                report["peers"][name]["round_trips"] = count
        finally:
            counted.close()
            proxy.close()
    return report


def synthetic_data(url: str, server_memories: int, personal: int = 100) -> PeerData:
    """Generated sentences, hashing vectors behind a lookup: bench/turn_scenario.py's data."""
    participants = [f"user-{i}" for i in range(5)]
    texts = sentences(server_memories + personal * len(participants))
    server, rest = texts[:server_memories], texts[server_memories:]
    questions = [
        "what tea does the shop serve on fridays?",
        "remind me what User 1 likes to cook",
        "do you remember the hiking plans?",
        "which books were recommended last week?",
    ]
    hashing = HashingEmbeddings(DIM)
    vectors = dict(zip(texts + questions, hashing.embed_documents(texts + questions), strict=True))
    return PeerData(
        url=url,
        dim=DIM,
        embeddings=Lookup(vectors, hashing),
        server_id="bench-server",
        server_texts=server,
        personal={u: rest[k :: len(participants)] for k, u in enumerate(participants)},
        questions=questions,
        speaker=participants[0],
    )


def main() -> None:
    """Build synthetic data in a fresh database, time the chosen peers, print the table."""
    from bench.common import bench_database

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--which", nargs="+", default=list(PEERS), choices=PEERS)
    parser.add_argument("--server-memories", type=int, default=100)
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--no-round-trips", action="store_true")
    args = parser.parse_args()
    with bench_database(f"kioku_bench_peers_{args.server_memories}") as url:
        data = synthetic_data(url, args.server_memories)
        report = measure(data, args.which, args.turns, round_trips=not args.no_round_trips)
    print(f"{args.server_memories:,} server memories, 5 x 100 personal, {args.turns} turns")
    print(f"{'peer':<22}{'p50 ms':>9}{'p95 ms':>9}{'round trips':>13}{'found':>7}")
    for name, r in report["peers"].items():
        print(
            f"{name:<22}{r['p50_ms']:>9.2f}{r['p95_ms']:>9.2f}"
            f"{r.get('round_trips', '-')!s:>13}{r['found']!s:>7}"
        )
    for name, reason in report["skipped"].items():
        print(f"{name:<22}skipped: {reason}")


if __name__ == "__main__":
    main()
