"""Soak: many scripted turns in one process, watching connections, memory and tables.

10,000 turns (by default) across 100 channels and 20 users through the per-turn graph
(scripted model, LangGraph ``PostgresSaver``). After every tenth of the run the sweeper
prunes short-term-memory checkpoints, the application prunes its conversation threads
(``checkpointer.prune``), and the figures are sampled: open connections to the database,
the process's resident memory, checkpoint rows and blob bytes, registry rows, the
longest conversation thread, and the size of every per-process cache a turn reaches
(token counts, short-term memory entries and summarised turns, memory windows, scope
sizes, rendered-text and SQL caches, pending access counts).

Turn latency should not drift: the run reports turn p50 of its first 1,000 turns against
its last 1,000 (target <= 1.1), and how much each sampled figure grew over the second
half of the run (plateau: about 1.0).

The machine's own speed moves over a run this long (a shared 2-core host can slow by a
third for minutes). So after every kioku turn the soak also times one turn of a
reference whose work does not grow: the ``postgres_store_flat`` peer of ``bench.peers``
(LangGraph ``PostgresStore``, 100 server and 5 x 100 personal memories, the same keys
updated in place), on the same database server. The drift is reported raw, beside the
reference's own, and as their ratio: a slower machine slows both alike, while growth in
kioku's state shows only in kioku's. ``--no-reference`` leaves the reference out.

Run: .venv/bin/python -m bench.soak [--turns 10000] [--no-reference]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from contextlib import ExitStack
from datetime import timedelta
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from sqlalchemy import text

from bench.common import bench_database, open_store, percentile
from bench.peers import build_peers, synthetic_data
from kioku import Participant, TurnContext
from kioku._context_build.build import ContextBuilder
from kioku._context_build.tokens import TiktokenCounter
from kioku._embeddings import EmbedderSpec, HashingEmbeddings
from kioku._memory.text import as_data
from kioku._search.sql import candidates_sql, scope_size_sql
from kioku._stm.model import utc_now
from kioku._stm.store import ShortTermMemory
from kioku.graphs import build_graph
from kioku.testing import Script, ScriptedChatModel, call_tool, echo

CHANNELS = 100
DRIFT_WINDOW = 1000
"""Turns compared at the start and the end of the run."""
PLATEAU_FIGURES = (
    "rss_mb",
    "checkpoints",
    "checkpoint_blobs",
    "checkpoint_blob_mb",
    "conversation_blob_kb",
    "checkpoint_writes",
    "stm_threads",
    "longest_thread_messages",
)
USERS = tuple(Participant(f"soak-user-{i}", f"Soaker {i}") for i in range(20))
SERVER = "soak-server"


def resident_mb() -> float:
    """The process's resident set size now, in MiB (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def soak(
    turns: int, progress: Callable[[int], None] | None = None, *, reference: bool = True
) -> dict[str, Any]:
    """Run ``turns`` turns; return the samples taken every tenth of the run.

    With ``reference``, one turn of the ``postgres_store_flat`` peer is timed after each
    kioku turn (see the module's docstring).
    """
    hashing = HashingEmbeddings(384)
    with bench_database("kioku_bench_soak") as url, ExitStack() as resources:
        reference_turn = open_reference(url, resources) if reference else None
        reference_latencies: list[float] = []
        store = open_store(url, EmbedderSpec(hashing, "hashing-384", 384))
        with store.accounts() as accounts:
            accounts.upsert_server(SERVER, "Soak", self_teaching_enabled=True)
            persona = accounts.create_persona(SERVER, "Kioku")
            for user in USERS:
                accounts.upsert_user(user.user_id, user.display_name)
        rng = random.Random(11)
        script = Script(fallback=echo)
        stm = ShortTermMemory(store, store.checkpointer())
        counter = TiktokenCounter()
        builder = ContextBuilder(store, stm, counter=counter)
        graph = build_graph(
            ScriptedChatModel(script=script),
            store,
            checkpointer=store.checkpointer(),
            stm=stm,
            context_builder=builder,
        )
        samples: list[dict[str, Any]] = []
        latencies: list[float] = []
        every_latency: list[float] = []
        last_sweep = utc_now()
        every = max(1, turns // 10)
        for turn in range(turns):
            channel = f"channel-{turn % CHANNELS}"
            speaker = rng.choice(USERS)
            others = tuple(rng.sample(USERS, 2))
            if turn % 50 == 0:  # now and then the model saves something
                script.add(
                    call_tool(
                        "create_long_term_memory",
                        memory_content=f"{{user}} mentioned soak fact {turn}",
                        memory_scope="target_user",
                        target_user=speaker.display_name,
                    )
                )
            context = TurnContext(
                server_id=SERVER,
                server_name="Soak",
                channel_id=channel,
                channel_name=channel,
                user=speaker,
                participants=(speaker, *[o for o in others if o != speaker]),
                persona=persona,
                bot_user_id="soak-bot",
            )
            start = time.perf_counter()
            graph.invoke(
                {
                    "messages": [
                        HumanMessage(f"turn {turn}: how is it going?", name=speaker.display_name)
                    ]
                },
                {"configurable": {"thread_id": f"conversation-{channel}"}},
                context=context,
            )
            latencies.append((time.perf_counter() - start) * 1000)
            if reference_turn is not None:
                start = time.perf_counter()
                reference_turn(turn)
                reference_latencies.append((time.perf_counter() - start) * 1000)
            if progress is not None:
                progress(1)
            if (turn + 1) % every == 0 or turn + 1 == turns:
                sweep_start = utc_now()
                stm.sweep(retention=timedelta(days=7), pruned_since=last_sweep)
                store.checkpointer().prune(
                    [f"conversation-channel-{c}" for c in range(CHANNELS)], strategy="keep_latest"
                )
                last_sweep = sweep_start
                longest = max(
                    len(graph.get_state(thread(c)).values.get("messages", []))
                    for c in range(CHANNELS)
                )
                samples.append(
                    sample(store, turn + 1, latencies, longest, caches(counter, stm, builder))
                )
                every_latency += latencies
                latencies = []
        store.close()
    window = min(DRIFT_WINDOW, max(1, turns // 2))
    kioku_drift = drift(every_latency, window)
    if reference_latencies:
        reference_drift = drift(reference_latencies, window)
        kioku_drift["reference"] = reference_drift
        kioku_drift["relative_to_reference"] = round(
            kioku_drift["ratio"] / reference_drift["ratio"], 3
        )
    return {
        "turns": turns,
        "channels": CHANNELS,
        "users": len(USERS),
        "thread_max_messages": store.settings.thread_max_messages,
        "stm_threads_possible": CHANNELS * (len(USERS) + 1),
        "samples": samples,
        "drift": kioku_drift,
        "growth_second_half": growth(samples),
    }


def drift(latencies: list[float], window: int) -> dict[str, Any]:
    """p50 of the first and of the last ``window`` latencies, and last / first."""
    first = statistics.median(latencies[:window])
    last = statistics.median(latencies[-window:])
    return {
        "window_turns": window,
        "first_p50_ms": round(first, 2),
        "last_p50_ms": round(last, 2),
        "ratio": round(last / first, 3),
    }


def open_reference(url: str, resources: ExitStack) -> Callable[[int], None]:
    """The ``postgres_store_flat`` peer's turn on ``url``: work that does not grow."""
    data = synthetic_data(url, server_memories=100)
    peers = build_peers(data, which=["postgres_store_flat"])
    resources.callback(peers.close)
    return peers.turns["postgres_store_flat"]


def thread(channel: int) -> RunnableConfig:
    """The graph config of a channel's conversation."""
    return {"configurable": {"thread_id": f"conversation-channel-{channel}"}}


def caches(
    counter: TiktokenCounter, stm: ShortTermMemory, builder: ContextBuilder
) -> dict[str, int]:
    """Entries held by each per-process cache a turn reaches (all bounded)."""
    store = stm.store
    return {
        "token_counts": counter.cache_len,
        "token_count_chars": counter.cached_chars,
        "stm_entries": len(stm._entries),
        "stm_summarised_turns": len(stm._summarised_turns),
        "memory_windows": len(store.cache),
        "rendered_lines": builder.cached_lines(),
        "scope_sizes": len(store.search_aids.sizes),
        "as_data": as_data.cache_info().currsize,
        "candidates_sql": candidates_sql.cache_info().currsize,
        "scope_size_sql": scope_size_sql.cache_info().currsize,
        "access_pending": store.access.pending,
    }


def growth(samples: list[dict[str, Any]]) -> dict[str, float]:
    """Each figure's last sample over its sample half-way through (plateau: about 1.0)."""
    if len(samples) < 2:
        return {}
    middle, last = samples[(len(samples) - 1) // 2], samples[-1]
    figures = {name: (middle[name], last[name]) for name in PLATEAU_FIGURES}
    figures |= {f"cache.{n}": (middle["caches"][n], v) for n, v in last["caches"].items()}
    return {name: round(b / a, 3) if a else float(b == 0) for name, (a, b) in figures.items()}


def sample(
    store: Any, turns: int, latencies: list[float], longest: int, cache_sizes: dict[str, int]
) -> dict[str, Any]:
    """Connections, memory and table sizes now, and the turn latency since the last sample."""
    with store.engine.connect() as connection:
        counts = connection.execute(
            text(
                "SELECT (SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()),"
                " (SELECT count(*) FROM checkpoints), (SELECT count(*) FROM checkpoint_blobs),"
                " (SELECT count(*) FROM checkpoint_writes), (SELECT count(*) FROM stm_threads),"
                " (SELECT coalesce(sum(octet_length(blob)), 0) FROM checkpoint_blobs),"
                " (SELECT coalesce(sum(octet_length(blob)), 0) FROM checkpoint_blobs"
                "  WHERE thread_id LIKE 'conversation-%')"
            )
        ).one()
    return {
        "turns": turns,
        "connections": counts[0],
        "rss_mb": round(resident_mb(), 1),
        "checkpoints": counts[1],
        "checkpoint_blobs": counts[2],
        "checkpoint_blob_mb": round(counts[5] / 2**20, 2),
        "conversation_blob_kb": round(counts[6] / 2**10, 1),
        "checkpoint_writes": counts[3],
        "stm_threads": counts[4],
        "longest_thread_messages": longest,
        "turn_p50_ms": round(statistics.median(latencies), 2),
        "turn_p95_ms": round(percentile(latencies, 0.95), 2),
        "caches": cache_sizes,
    }


def main() -> None:
    """Run the soak and print its samples."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--no-reference", action="store_true")
    args = parser.parse_args()
    result = soak(args.turns, reference=not args.no_reference)
    for s in result["samples"]:
        print(s)
    drift = result["drift"]
    print(
        f"turn p50, first {drift['window_turns']:,} turns: {drift['first_p50_ms']} ms; "
        f"last {drift['window_turns']:,}: {drift['last_p50_ms']} ms; ratio {drift['ratio']}"
    )
    if "reference" in drift:
        ref = drift["reference"]
        print(
            f"reference (postgres_store_flat) turn p50: {ref['first_p50_ms']} ms; "
            f"{ref['last_p50_ms']} ms; ratio {ref['ratio']}"
        )
        print(f"kioku's drift relative to the reference: {drift['relative_to_reference']}")
    print("target <= 1.1")
    print("growth over the second half (last / middle sample):")
    for name, ratio in result["growth_second_half"].items():
        print(f"  {name}: {ratio}")


if __name__ == "__main__":
    main()
