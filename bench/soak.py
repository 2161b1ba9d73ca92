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
third for minutes), so the first and last 1,000 turns, minutes apart, are not timed alike.
After the run the soak therefore also compares like with like: a second, fresh kioku
(the same graph and settings on a sibling database of the same server) runs 1,000
warm-up turns, then the soaked one and the fresh one take turns, 1,000 each, alternately.
The soaked one's p50 over the fresh one's is the drift the target judges: state that
10,000 turns accumulated (tables, caches) shows in it; the machine's speed does not.
The first/last figures are reported beside it. ``--no-fresh`` leaves the comparison out.

Run: .venv/bin/python -m bench.soak [--turns 10000] [--no-fresh]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from sqlalchemy import text

from bench.common import bench_database, new_database, open_store, percentile, seed_accounts
from kioku import KiokuStore, Participant, Persona, TurnContext
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


@dataclass
class Soaker:
    """One kioku deployment under soak: a store, its graph, and the turns it has taken."""

    store: KiokuStore
    graph: Any
    stm: ShortTermMemory
    counter: TiktokenCounter
    builder: ContextBuilder
    script: Script
    persona: Persona
    rng: random.Random = field(default_factory=lambda: random.Random(11))
    turns: int = 0
    last_sweep: datetime = field(default_factory=utc_now)

    @classmethod
    def open(cls, url: str) -> Soaker:
        """A store on ``url`` with the soak's server, persona and users, and its graph."""
        hashing = HashingEmbeddings(384)
        store = open_store(url, EmbedderSpec(hashing, "hashing-384", 384))
        persona = seed_accounts(store, SERVER, "Soak", USERS)
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
        return cls(store, graph, stm, counter, builder, script, persona)

    def turn(self) -> float:
        """Run the next turn; its latency in ms."""
        turn, rng = self.turns, self.rng
        self.turns += 1
        channel = f"channel-{turn % CHANNELS}"
        speaker = rng.choice(USERS)
        others = tuple(rng.sample(USERS, 2))
        if turn % 50 == 0:  # now and then the model saves something
            self.script.add(
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
            persona=self.persona,
            bot_user_id="soak-bot",
        )
        start = time.perf_counter()
        self.graph.invoke(
            {
                "messages": [
                    HumanMessage(f"turn {turn}: how is it going?", name=speaker.display_name)
                ]
            },
            {"configurable": {"thread_id": f"conversation-{channel}"}},
            context=context,
        )
        return (time.perf_counter() - start) * 1000

    def maintain(self) -> None:
        """What a deployment runs now and then: the sweeper, and pruning conversations."""
        sweep_start = utc_now()
        self.stm.sweep(retention=timedelta(days=7))
        self.store.checkpointer().prune(
            [f"conversation-channel-{c}" for c in range(CHANNELS)], strategy="keep_latest"
        )
        self.last_sweep = sweep_start

    def longest_thread(self) -> int:
        """Messages in the longest conversation thread."""
        return max(
            len(self.graph.get_state(thread(c)).values.get("messages", [])) for c in range(CHANNELS)
        )


def soak(
    turns: int, progress: Callable[[int], None] | None = None, *, fresh: bool = True
) -> dict[str, Any]:
    """Run ``turns`` turns; return the samples taken every tenth of the run.

    With ``fresh``, the soaked deployment is then timed against a fresh one in
    alternating turns (see the module's docstring).
    """
    with bench_database("kioku_bench_soak") as url:
        soaked = Soaker.open(url)
        samples: list[dict[str, Any]] = []
        latencies: list[float] = []
        every_latency: list[float] = []
        every = max(1, turns // 10)
        for turn in range(turns):
            latencies.append(soaked.turn())
            if progress is not None:
                progress(1)
            if (turn + 1) % every == 0 or turn + 1 == turns:
                soaked.maintain()
                samples.append(
                    sample(
                        soaked.store,
                        turn + 1,
                        latencies,
                        soaked.longest_thread(),
                        caches(soaked.counter, soaked.stm, soaked.builder),
                    )
                )
                every_latency += latencies
                latencies = []
        window = min(DRIFT_WINDOW, max(1, turns // 2))
        result: dict[str, Any] = {
            "turns": turns,
            "channels": CHANNELS,
            "users": len(USERS),
            "thread_max_messages": soaked.store.settings.thread_max_messages,
            "stm_threads_possible": CHANNELS * (len(USERS) + 1),
            "samples": samples,
            "drift": drift(every_latency, window),
            "growth_second_half": growth(samples),
        }
        if fresh:
            result["drift"]["against_fresh"] = against_fresh(soaked, url, window)
        soaked.store.close()
    return result


def against_fresh(soaked: Soaker, url: str, turns: int) -> dict[str, Any]:
    """The soaked deployment's turn p50 over a fresh one's, timed in alternating turns.

    The fresh one (a sibling database on the same server) first takes ``turns`` warm-up
    turns; then each takes ``turns`` more, one after the other.
    """
    with new_database(url, "kioku_bench_soak_fresh") as fresh_url:
        fresh = Soaker.open(fresh_url)
        try:
            for _ in range(turns):
                fresh.turn()
            fresh.maintain()
            soaked.maintain()
            timed: dict[str, list[float]] = {"soaked": [], "fresh": []}
            for _ in range(turns):
                timed["soaked"].append(soaked.turn())
                timed["fresh"].append(fresh.turn())
        finally:
            fresh.store.close()
    p50 = {name: statistics.median(values) for name, values in timed.items()}
    return {
        "turns_each": turns,
        "fresh_warmup_turns": turns,
        "soaked_p50_ms": round(p50["soaked"], 2),
        "fresh_p50_ms": round(p50["fresh"], 2),
        "ratio": round(p50["soaked"] / p50["fresh"], 3),
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


def thread(channel: int) -> RunnableConfig:
    """The graph config of a channel's conversation."""
    return {"configurable": {"thread_id": f"conversation-channel-{channel}"}}


def caches(
    counter: TiktokenCounter, stm: ShortTermMemory, builder: ContextBuilder
) -> dict[str, int]:
    """Entries held by each per-process cache a turn reaches (all bounded)."""
    deps = stm.deps
    return {
        "token_counts": counter.cache_len,
        "token_count_chars": counter.cached_chars,
        "stm_entries": len(stm._entries),
        "stm_summarised_turns": len(stm._summarised_turns),
        "memory_windows": len(deps.windows.cache),
        "rendered_lines": builder.cached_lines(),
        "scope_sizes": len(deps.search_aids.sizes),
        "as_data": as_data.cache_info().currsize,
        "candidates_sql": candidates_sql.cache_info().currsize,
        "scope_size_sql": scope_size_sql.cache_info().currsize,
        "access_pending": deps.access.pending,
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
    parser.add_argument("--no-fresh", action="store_true")
    args = parser.parse_args()
    result = soak(args.turns, fresh=not args.no_fresh)
    for s in result["samples"]:
        print(s)
    drift = result["drift"]
    print(
        f"turn p50, first {drift['window_turns']:,} turns: {drift['first_p50_ms']} ms; "
        f"last {drift['window_turns']:,}: {drift['last_p50_ms']} ms; ratio {drift['ratio']}"
    )
    if "against_fresh" in drift:
        ab = drift["against_fresh"]
        print(
            f"alternating turns, soaked vs fresh (after {ab['fresh_warmup_turns']:,} warm-up "
            f"turns): {ab['soaked_p50_ms']} ms vs {ab['fresh_p50_ms']} ms; ratio {ab['ratio']}"
        )
    print("target <= 1.1")
    print("growth over the second half (last / middle sample):")
    for name, ratio in result["growth_second_half"].items():
        print(f"  {name}: {ratio}")


if __name__ == "__main__":
    main()
