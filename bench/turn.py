"""Per-turn memory overhead and short-term-memory lookup, beside LangGraph's PostgresStore.

A turn's memory work, without the model and without query embedding:
intent gate → context build (server memories, 5 participants' personal memories, this
channel's and other channels' short-term memory) → one tool call (an update of a memory)
→ passive capture of the turn into short-term memory.

PostgresStore doing the same work: a search of the server's namespace and of each
participant's (query embedding excluded, as for kioku), a get of this channel's entry
and a listing of the newest other-channel entries, a put for the tool's write and a put
for the capture.

Run: .venv/bin/python -m bench.turn [--server-memories 100 10000] [--turns 200] [--curve]
[--alone]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from typing import Any

from langchain_core.messages import HumanMessage

from bench.common import SHOWN_MEMORY_ID, bench_database, new_database
from bench.corpus import DIM, Lookup
from bench.peer_data import PeerData
from bench.peers import PEERS, build_peers, count_round_trips
from bench.rounds import Rounds, numbered
from bench.roundtrips import RoundTripProxy
from bench.turn_alone import QUIET_LOAD, QUIET_WAIT_S, measure_alone
from bench.turn_scenario import (
    PARTICIPANTS,
    PERSONAL_PER_USER,
    QUESTIONS,
    SERVER,
    Scenario,
    build_scenario,
    kioku_turn,
)
from kioku import KiokuStore
from kioku._accounts import AccountRepository
from kioku._context_build import loader
from kioku._context_build.build import ContextBuilder
from kioku._context_build.items import PERSONAL_MEMORIES, SERVER_MEMORIES
from kioku._db.engine import make_engine
from kioku._embeddings import EmbedderSpec, HashingEmbeddings
from kioku._stm.store import ShortTermMemory


def kioku_rendered(scenario: Scenario) -> int:
    """Memories kioku's context shows for the first question (server and personal blocks)."""
    built = ContextBuilder(scenario.store, scenario.stm).build(
        scenario.context,
        [HumanMessage(QUESTIONS[0], name=scenario.context.user.display_name)],
    )
    return sum(
        len(SHOWN_MEMORY_ID.findall(item.text))
        for item in built.items
        if item.tag in (SERVER_MEMORIES, PERSONAL_MEMORIES)
    )


def kioku_round_trips(
    url: str, scenario: Scenario, vectors: dict[str, list[float]], warmup: int = 3
) -> int:
    """Round trips of one kioku turn (after ``warmup`` turns), counted by a proxy."""
    proxy = RoundTripProxy(url)
    lookup = EmbedderSpec(Lookup(vectors, HashingEmbeddings(DIM)), f"hashing-{DIM}", DIM)
    store = KiokuStore(
        make_engine(proxy.url),
        settings=scenario.store.settings.model_copy(update={"database_url": proxy.url}),
        embedder=lookup,
    )
    try:
        stm = ShortTermMemory(store, store.checkpointer())
        turn = kioku_turn(store, stm, scenario.context, scenario.updatable, vectors)
        for i in range(warmup):
            turn(i)
        store.access.flush()
        proxy.reset()
        turn(warmup)
        return proxy.reset()
    finally:
        store.close()
        proxy.close()


def peer_data(url: str, scenario: Scenario, vectors: dict[str, list[float]]) -> PeerData:
    """The scenario's memories and questions, for :mod:`bench.peers`."""
    return PeerData(
        url=url,
        dim=DIM,
        embeddings=Lookup(vectors, HashingEmbeddings(DIM)),
        server_id=SERVER,
        server_texts=scenario.server_texts,
        personal=scenario.personal_texts,
        questions=QUESTIONS,
        speaker=PARTICIPANTS[0].user_id,
    )


def stm_contenders(scenario: Scenario) -> dict[str, Callable[[], object]]:
    """Other-channel lookup: kioku's candidates + chosen entries vs PostgresStore's listing.

    Kioku's side reads the settings and the registry rows in statements of their own (a
    context build reads both with its turn state, in one).
    """
    store, stm, peer, context = scenario.store, scenario.stm, scenario.peer, scenario.context

    def kioku_lookup() -> None:
        with store.sessions() as session:
            settings = AccountRepository(session).settings_for(context)
            loader.load_other_channel_entries(session, store.deps, stm, context, settings)

    def peer_lookup() -> None:
        peer.search(("stm", SERVER), limit=4)

    return {"kioku": kioku_lookup, "peer": peer_lookup}


def measure_turns(
    server_memories: int,
    turns: int,
    channels: int = 50,
    which: Sequence[str] = PEERS,
) -> dict[str, Any]:
    """Per-turn p50/p95 and round trips of kioku and each peer, one database, one run.

    kioku and the peers alternate in rounds (:class:`bench.rounds.Rounds`); round trips
    are counted afterwards through a proxy, one turn each after warm-up.
    """
    vectors: dict[str, list[float]] = {}
    with bench_database(f"kioku_bench_turn_{server_memories}") as url:
        scenario = build_scenario(url, server_memories, channels, vectors)
        data = peer_data(url, scenario, vectors)
        peers = build_peers(data, which=which)
        try:
            step = iter(range(10**9))
            ours = kioku_turn(
                scenario.store, scenario.stm, scenario.context, scenario.updatable, vectors
            )
            contenders = {"kioku": numbered(ours, step)}
            contenders |= {name: numbered(turn, step) for name, turn in peers.turns.items()}
            rounds = Rounds.of_turns(contenders, turns)
            skipped = dict(peers.skipped)
            found = dict(peers.found)
            found["kioku"] = kioku_rendered(scenario)
        finally:
            peers.close()
        try:
            trips = {"kioku": kioku_round_trips(url, scenario, vectors)}
            proxy = RoundTripProxy(url)
            counted = build_peers(
                data, which=list(rounds.samples)[1:], connect_url=proxy.url, load=False
            )
            try:
                trips |= count_round_trips(counted, proxy.reset)
            finally:
                counted.close()
                proxy.close()
        finally:
            scenario.close()
    return {
        "server_memories": server_memories,
        "contenders": {
            name: {
                "p50_ms": rounds.p50(name),
                "p95_ms": rounds.p95(name),
                "round_trips": trips.get(name),
                "found": found.get(name),
            }
            for name in rounds.samples
        },
        "skipped": skipped,
    }


CURVE_PEERS = ("postgres_store_flat", "postgres_store_hnsw")
"""The peers whose own curves are printed beside kioku's: ``PostgresStore`` scanning a
scope exactly (as kioku does up to 2,000 memories) and through HNSW (as kioku does for the
larger scopes, ``kioku._db.vectors.EXACT_SEARCH_MAX_ROWS``)."""


def measure_memory_count(sizes: Sequence[int], turns: int) -> dict[str, Any]:
    """Turn p50/p95 at each size (memories per scope), kioku and :data:`CURVE_PEERS`.

    Each size has its own database on one server; every contender at every size
    alternates with the others in 5-turn rounds in this one process, so the curve
    compares turns timed side by side, not minutes apart.
    """
    vectors: dict[str, dict[str, list[float]]] = {}
    contenders: dict[str, Callable[[], object]] = {}
    with ExitStack() as stack:
        server_url = stack.enter_context(bench_database(f"kioku_bench_curve_{sizes[0]}"))
        for size in sizes:
            url = (
                server_url
                if size == sizes[0]
                else stack.enter_context(new_database(server_url, f"kioku_bench_curve_{size}"))
            )
            sized = vectors.setdefault(str(size), {})
            scenario = build_scenario(url, size, 50, sized)
            stack.callback(scenario.close)
            peers = build_peers(peer_data(url, scenario, sized), which=list(CURVE_PEERS))
            stack.callback(peers.close)
            step = iter(range(10**9))
            ours = kioku_turn(
                scenario.store, scenario.stm, scenario.context, scenario.updatable, sized
            )
            contenders[f"kioku {size}"] = numbered(ours, step)
            for name, turn in peers.turns.items():
                contenders[f"{name} {size}"] = numbered(turn, step)
        rounds = Rounds.of_turns(contenders, turns)
    figures = {
        name: {"p50_ms": rounds.p50(name), "p95_ms": rounds.p95(name)} for name in rounds.samples
    }
    small, large = min(sizes), max(sizes)
    ratios = {
        who: figures[f"{who} {large}"]["p50_ms"] / figures[f"{who} {small}"]["p50_ms"]
        for who in ("kioku", *CURVE_PEERS)
        if f"{who} {large}" in figures and f"{who} {small}" in figures
    }
    return {"sizes": list(sizes), "contenders": figures, "ratio_p50": ratios}


def measure_stm_lookup(channels: int, lookups: int) -> dict[str, Any]:
    """Other-channel STM lookup at ``channels`` channels."""
    vectors: dict[str, list[float]] = {}
    with bench_database("kioku_bench_stm") as url:
        scenario = build_scenario(url, 100, channels, vectors)
        try:
            rounds = Rounds.run(stm_contenders(scenario), per_round=max(1, lookups // 5))
        finally:
            scenario.close()
    return {
        "channels": channels,
        "kioku_p50_ms": rounds.p50("kioku"),
        "kioku_p95_ms": rounds.p95("kioku"),
        "postgres_store_p50_ms": rounds.p50("peer"),
        "postgres_store_p95_ms": rounds.p95("peer"),
    }


def turn_table(result: dict[str, Any]) -> str:
    """The per-turn figures of one :func:`measure_turns` run as aligned text."""
    lines = [
        f"{result['server_memories']:,} server memories, 5 x {PERSONAL_PER_USER} personal",
        f"{'contender':<22}{'p50 ms':>9}{'p95 ms':>9}{'round trips':>13}{'found':>7}",
    ]
    for name, r in result["contenders"].items():
        lines.append(
            f"{name:<22}{r['p50_ms']:>9.2f}{r['p95_ms']:>9.2f}"
            f"{r['round_trips']!s:>13}{r['found']!s:>7}"
        )
    lines += [f"{name:<22}skipped: {why}" for name, why in result["skipped"].items()]
    return "\n".join(lines)


def main() -> None:
    """Print the per-turn figures for each server size."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--server-memories", type=int, nargs="+", default=[100, 10_000])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--which", nargs="+", default=list(PEERS), choices=PEERS)
    parser.add_argument(
        "--curve",
        action="store_true",
        help="only the memories-per-scope curve: sizes alternating in one process",
    )
    parser.add_argument(
        "--alone",
        action="store_true",
        help="only kioku's turns, alone in the process (3 x --turns): the absolute p50/p95",
    )
    parser.add_argument(
        "--quiet-wait",
        type=float,
        default=QUIET_WAIT_S,
        help=f"with --alone: seconds to wait at most for a load average <= {QUIET_LOAD}",
    )
    args = parser.parse_args()
    if args.alone:
        for size in args.server_memories:
            a = measure_alone(size, 3 * args.turns, args.quiet_wait)
            print(
                f"kioku alone, {size:,} per scope, {a['turns']} turns: p50 {a['p50_ms']:.2f} ms"
                f"  p95 {a['p95_ms']:.2f} ms  (load {a['load_before']} -> {a['load_after']},"
                f" waited {a['quiet_wait_s']} s for quiet)"
            )
        return
    if args.curve:
        curve = measure_memory_count(args.server_memories, args.turns)
        for name, f in curve["contenders"].items():
            print(f"{name:<28}p50 {f['p50_ms']:8.2f} ms  p95 {f['p95_ms']:8.2f} ms")
        for who, ratio in curve["ratio_p50"].items():
            print(f"{who}: p50 ratio {ratio:.3f} (target <= 1.5 for kioku)")
        return
    for size in args.server_memories:
        print(turn_table(measure_turns(size, args.turns, which=args.which)))
    s = measure_stm_lookup(1000, args.turns)
    print(
        f"STM lookup at 1,000 channels: kioku p50/p95 {s['kioku_p50_ms']:.2f}/"
        f"{s['kioku_p95_ms']:.2f} ms   PostgresStore {s['postgres_store_p50_ms']:.2f}/"
        f"{s['postgres_store_p95_ms']:.2f} ms"
    )


if __name__ == "__main__":
    main()
