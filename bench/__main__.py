"""Every benchmark in one command, each figure beside its peers from the same run.

Run from a clone after the README's test setup::

    .venv/bin/python -m bench            # the full suite (about 25 minutes)
    .venv/bin/python -m bench --quick    # smaller sizes, a few minutes
    .venv/bin/kioku bench [--quick]      # the same

Peers (:mod:`bench.peers` says exactly what each does per turn): LangGraph
``PostgresStore`` (halfvec, flat or HNSW, matching kioku's exact or HNSW search), LangMem's
tools over it, Mem0 OSS on the same database (``pip install -e '.[bench]'``; skipped with a
note when missing), and hand-written raw-SQL floors (one doing the SQL work of kioku's
turn, the target's yardstick, and for reference the vector-only floor used before).
Prints a table, writes ``bench/results.json`` and the generated part of
``bench/RESULTS.md`` (between its ``kioku-bench`` markers), with the load average before
and after.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from bench import agent_report, search
from bench.steps import FULL, QUICK, STEPS, Plan, run_step
from bench.turn import CURVE_PEERS
from kioku._db.vectors import EXACT_SEARCH_MAX_ROWS

HERE = Path(__file__).resolve().parent
START, END = "<!-- kioku-bench:start -->", "<!-- kioku-bench:end -->"


@dataclass(frozen=True)
class Row:
    """One line of the table: a figure for kioku, the peer's, and the target."""

    figure: str
    kioku: float
    peer: float | None
    unit: str
    target: str = ""
    peer_name: str = ""
    met: bool | None = None
    """Whether the target is met (``None``: no target)."""

    @property
    def ratio(self) -> str:
        """Kioku ÷ peer (for latencies lower is better, for throughput higher)."""
        return f"{self.kioku / self.peer:.2f}" if self.peer else ""

    @property
    def verdict(self) -> str:
        """``met`` / ``MISSED`` / empty."""
        return "" if self.met is None else ("met" if self.met else "MISSED")


def _waited(alone: dict[str, Any]) -> str:
    """How long the idle-machine step waited for quiet (results before it did not)."""
    waited = alone.get("quiet_wait_s")
    return "no wait for quiet" if waited is None else f"after {waited} s waiting for quiet"


def machine() -> dict[str, str]:
    """What ran the benchmarks."""
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    memory_kb = next(
        int(line.split()[1])
        for line in Path("/proc/meminfo").read_text().splitlines()
        if line.startswith("MemTotal")
    )
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    return {
        "cpu": f"{os.cpu_count()} x {cpu}",
        "memory": f"{memory_kb / 1024 / 1024:.0f} GiB",
        "python": platform.python_version(),
        "system": platform.platform(),
        "commit": commit,
    }


def run(plan: Plan, console: Console) -> dict[str, Any]:
    """Run every step of ``plan``, each in a fresh process; the raw results.

    A fresh process per step keeps one step's leftovers (heap, caches, pools) out of the
    next one's figures; within a step kioku and its peers still alternate in one process.
    """
    results: dict[str, Any] = {}
    spawn = multiprocessing.get_context("spawn")
    with Progress(console=console, transient=False) as progress:
        overall = progress.add_task("benchmarks", total=len(STEPS))
        for name in STEPS:
            task = progress.add_task(name, total=None)
            with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as pool:
                results[name] = pool.submit(run_step, name, plan).result()
            progress.update(task, total=1, completed=1)
            progress.advance(overall)
    results["peak_rss_mb"] = {
        "benchmark_process": max(results[name]["peak_rss_mb"] for name in STEPS),
        "isolation_process": results["isolation"]["children_peak_rss_mb"],
    }
    return results


FLOORS = ("raw_sql_floor", "raw_sql_vector_floor")
"""The hand-written SQL contenders (:mod:`bench.peers`), not library peers."""

GRAPH_PEERS = ("langmem", "mem0")
"""Peers whose per-turn work (:mod:`bench.peers`) runs a checkpointed graph: never compared
with kioku's functions called directly (:mod:`bench.agent` compares whole agents)."""

FUNCTIONS = "kioku functions only (no agent, no checkpointer): "
"""The label of every figure timing kioku's functions called directly."""


def fastest_peer(result: dict[str, Any], q: str) -> tuple[str, float]:
    """The library peer doing the same work without a graph with the lowest ``q`` latency."""
    peers = {
        name: r[f"{q}_ms"]
        for name, r in result["contenders"].items()
        if name not in ("kioku", *FLOORS, *GRAPH_PEERS)
    }
    name = min(peers, key=peers.__getitem__)
    return name, peers[name]


def agent_rows(r: dict[str, Any]) -> list[Row]:
    """The headline lines: whole ``create_agent`` turns (:mod:`bench.agent`) and targets."""
    out = []
    for key, label in agent_report.RUNS.items():
        run = r[key]
        name, _ = agent_report.fastest_peer(run, "p50")
        out.append(
            Row(
                f"agent turn p50 over the bare agent's, {label} (load {run['load_after']})",
                agent_report.overhead(run, "kioku")[0],
                agent_report.overhead(run, name)[0],
                "ms",
                peer_name=f"{name}'s",
            )
        )
    for t in agent_report.targets(r):
        out.append(
            Row(
                f"{t.figure} (load {t.load})",
                t.kioku,
                t.peer,
                t.unit,
                t.against.replace(f" ({t.peer_name})", ""),
                t.peer_name,
                t.met,
            )
        )
    return out


def rows(plan: Plan, r: dict[str, Any]) -> list[Row]:
    """The table's lines: the agent's first, then kioku's functions called directly."""
    return agent_rows(r["agent"]) + function_rows(plan, r)


def function_rows(plan: Plan, r: dict[str, Any]) -> list[Row]:
    """The lines of kioku's functions called directly, and of the other steps."""
    s = r["search"]
    ms, recall, writes = s["search_ms"], s["recall_at_10"], s["writes_per_second"]
    small, stm = r["turn_small"], r["stm_lookup"]
    ours = small["contenders"]["kioku"]
    floor = small["contenders"].get("raw_sql_floor")
    out: list[Row] = []
    for q in ("p50", "p95"):
        name, peer = fastest_peer(small, q)
        out.append(
            Row(
                f"{FUNCTIONS}per-turn memory work {q}, 100 per scope (fastest peer)",
                ours[f"{q}_ms"],
                peer,
                "ms",
                "<= fastest peer",
                name,
                ours[f"{q}_ms"] <= peer,
            )
        )
    if floor is not None:
        out.append(
            Row(
                f"{FUNCTIONS}per-turn p50 vs raw-SQL floor (the same SQL work)",
                ours["p50_ms"],
                floor["p50_ms"],
                "ms",
                "<= 2x floor",
                "raw_sql_floor",
                ours["p50_ms"] <= 2 * floor["p50_ms"],
            )
        )
    vector_floor = small["contenders"].get("raw_sql_vector_floor")
    if vector_floor is not None:
        out.append(
            Row(
                f"{FUNCTIONS}per-turn p50 vs the vector-only floor (reference: no text "
                "search, no personal ranking, no settings)",
                ours["p50_ms"],
                vector_floor["p50_ms"],
                "ms",
                peer_name="raw_sql_vector_floor",
            )
        )
    alone = r["turn_alone"]
    out.append(
        Row(
            f"{FUNCTIONS}per-turn p95, {alone['server_memories']} per scope, kioku alone "
            f"(load {alone['load_before']:.2f} before, {alone['load_after']:.2f} after, "
            f"{_waited(alone)})",
            alone["p95_ms"],
            None,
            "ms",
            "<= 15 ms (idle machine)",
            met=alone["p95_ms"] <= 15,
        )
    )
    out.append(
        Row(
            f"{FUNCTIONS}database round trips per turn",
            ours["round_trips"],
            floor["round_trips"] if floor else None,
            "",
            "<= 10",
            "raw_sql_floor" if floor else "",
            ours["round_trips"] <= 10,
        )
    )
    curve = r["memory_curve"]
    ratios = curve["ratio_p50"]
    small_size, large_size = min(curve["sizes"]), max(curve["sizes"])
    out.append(
        Row(
            f"{FUNCTIONS}turn p50, {large_size:,} vs {small_size} memories per scope",
            ratios["kioku"],
            ratios.get(CURVE_PEERS[0]),
            "x",
            "<= 1.5x",
            f"{CURVE_PEERS[0]}'s own ratio"
            + "".join(f"; {who}'s {ratios[who]:.2f}x" for who in CURVE_PEERS[1:] if who in ratios),
            ratios["kioku"] <= 1.5,
        )
    )
    conv = r["conversation"]
    short, long = (str(n) for n in plan.conversation_lengths)
    out.append(
        Row(
            f"per-turn graph (build_graph): turn p50, {int(long):,}- vs {int(short)}-message "
            "conversation",
            conv["ratio_p50"],
            None,
            "x",
            "<= 1.2x",
            met=conv["ratio_p50"] <= 1.2,
        )
    )
    drift = r["soak"]["drift"]
    fresh = drift.get("against_fresh")
    out.append(
        Row(
            f"soak: turn p50, last vs first {drift['window_turns']:,} turns (minutes apart)",
            drift["ratio"],
            None,
            "x",
            "" if fresh else "<= 1.1x",
            met=None if fresh else drift["ratio"] <= 1.1,
        )
    )
    if fresh:
        out.append(
            Row(
                f"soak: turn p50 after {r['soak']['turns']:,} turns vs a fresh deployment, "
                "alternating turns",
                fresh["soaked_p50_ms"],
                fresh["fresh_p50_ms"],
                "ms",
                "<= 1.1x",
                f"fresh kioku (after {fresh['fresh_warmup_turns']:,} turns)",
                fresh["ratio"] <= 1.1,
            )
        )
    up = r["startup"]
    out += [
        Row("startup: import kioku", up["import_s"], None, "s", "< 1 s", met=up["import_s"] < 1),
        Row("startup: kioku --help", up["help_s"], None, "s", "< 1 s", met=up["help_s"] < 1),
        Row(
            "startup: kioku memories list",
            up["memories_list_s"],
            None,
            "s",
            "< 1 s",
            met=up["memories_list_s"] < 1,
        ),
        Row(
            f"tool-path writes, no HNSW (limits <= {EXACT_SEARCH_MAX_ROWS:,} per scope)",
            writes["kioku_tool_path_without_hnsw"],
            writes["postgres_store_flat_put"],
            "/s",
            "",
            "PostgresStore flat",
        ),
        Row(
            "tool-path writes, HNSW index kept",
            writes["kioku_tool_path_with_hnsw"],
            writes["postgres_store_hnsw_put"],
            "/s",
            "",
            "PostgresStore HNSW",
        ),
        Row(
            f"vector search p95, {plan.search_scale:,} memories, 5% scope, exact",
            ms["kioku_exact_vector_p95"],
            ms["postgres_store_flat_p95"],
            "ms",
            "",
            "PostgresStore flat",
        ),
        Row(
            f"vector search p95, {plan.search_scale:,} memories, 5% scope, HNSW",
            ms["kioku_hnsw_vector_p95"],
            ms["postgres_store_hnsw_p95"],
            "ms",
            "",
            "PostgresStore HNSW",
        ),
        Row(
            f"hybrid search p95, {plan.search_scale:,} memories (kioku only)",
            ms["kioku_hybrid_p95"],
            None,
            "ms",
            "<= 10 ms",
            met=ms["kioku_hybrid_p95"] <= 10,
        ),
        Row(
            "recall@10 vs exact, exact search",
            recall["kioku"],
            recall["postgres_store_flat"],
            "",
            "",
            "PostgresStore flat",
        ),
        Row(
            "recall@10 vs exact, through HNSW",
            recall["kioku_hnsw"],
            recall["postgres_store_hnsw"],
            "",
            "",
            "PostgresStore HNSW",
        ),
        Row(
            f"STM other-channel lookup p95, {stm['channels']:,} channels",
            stm["kioku_p95_ms"],
            stm["postgres_store_p95_ms"],
            "ms",
            "",
            "PostgresStore listing",
        ),
        Row(
            "peak RSS, largest benchmark step's process",
            r["peak_rss_mb"]["benchmark_process"],
            None,
            "MiB",
        ),
        Row(
            f"isolation property, {r['isolation']['cases']:,} random turns",
            1.0 if r["isolation"]["held"] else 0.0,
            None,
            "held",
            "1 (held)",
            met=bool(r["isolation"]["held"]),
        ),
    ]
    return out


def _cell(value: float | None, unit: str) -> str:
    return "" if value is None else f"{value:,.2f} {unit}".strip()


def table(lines: list[Row]) -> Table:
    """A rich table of ``lines``."""
    out = Table(title="kioku benchmarks (peers from the same run)")
    for column in ("figure", "kioku", "peer", "value", "kioku/peer", "target", ""):
        out.add_column(column, justify="left" if column in ("figure", "peer") else "right")
    for row in lines:
        out.add_row(
            row.figure,
            _cell(row.kioku, row.unit),
            row.peer_name,
            _cell(row.peer, row.unit),
            row.ratio,
            row.target,
            row.verdict,
        )
    return out


def turn_lines(result: dict[str, Any]) -> list[str]:
    """A markdown table of every contender of one per-turn run."""
    lines = [
        f"{FUNCTIONS}per-turn work at {result['server_memories']:,} server memories and "
        "5 x 100 personal (`python -m bench.turn` does the same; `bench/peers.py` says what "
        "each peer does; peers running a checkpointed graph are not compared here):",
        "",
        "| contender | p50 ms | p95 ms | round trips | memories rendered |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, c in result["contenders"].items():
        if name in GRAPH_PEERS:
            continue
        found = "" if c.get("found") is None else c["found"]
        lines.append(
            f"| {name} | {c['p50_ms']:.2f} | {c['p95_ms']:.2f} | {c['round_trips']} | {found} |"
        )
    lines += [f"| {name} | skipped: {why} | | | |" for name, why in result["skipped"].items()]
    return [*lines, ""]


def markdown(plan: Plan, quick: bool, info: dict[str, str], r: dict[str, Any]) -> str:
    """The generated part of RESULTS.md."""
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    load = r["load_average"]
    lines = [
        START,
        f"## Benchmark suite ({'quick' if quick else 'full'}) — {when}",
        "",
        "Command (from the repository root, after the README's test setup and "
        "`.venv/bin/pip install -e '.[bench]'` for the LangMem and Mem0 peers):",
        "",
        "```bash",
        f".venv/bin/python -m bench{' --quick' if quick else ''}",
        "```",
        "",
        f"Machine: {info['cpu']}, {info['memory']} RAM, Python {info['python']}, "
        f"{info['system']}; commit {info['commit']}. Load average (1 min) before "
        f"{load['before']:.2f}, after {load['after']:.2f}. Data: {r.get('data', 'n/a')}. "
        "Timings alternate between kioku and its peers in rounds, so a noisy neighbour slows "
        "all alike; read the ratios. Query and document embeddings are precomputed for every "
        "contender.",
        "",
        "### Headline: whole `create_agent` turns (`python -m bench.agent`)",
        "",
        "The README Quickstart's agent beside LangMem's and Mem0's agents and a bare agent, "
        "the same scripted model (one memory tool call, then an answer), the model's own "
        "time nil; `bench/agent_kioku.py` and `bench/agent_peers.py` say what each does.",
        "",
        *agent_report.markdown(r["agent"]),
        "",
        "### Every figure",
        "",
        "The agent's first; rows marked *kioku functions only* time kioku's functions "
        "called directly, beside peers doing the same work without a checkpointed graph.",
        "",
        "| figure | kioku | peer | peer's figure | kioku/peer | target | |",
        "|---|---:|---|---:|---:|---|---|",
    ]
    for row in rows(plan, r):
        lines.append(
            f"| {row.figure} | {_cell(row.kioku, row.unit)} | {row.peer_name} | "
            f"{_cell(row.peer, row.unit)} | {row.ratio} | {row.target} | {row.verdict} |"
        )
    lines += ["", *turn_lines(r["turn_small"]), *turn_lines(r["turn_large"])]
    curve = r["memory_curve"]
    lines += [
        "Memories per scope (`python -m bench.turn --curve`): the same turn at each size, "
        "each size in its own database on one server, kioku and "
        + " and ".join(f"`{who}`" for who in CURVE_PEERS)
        + " at every size alternating in 5-turn rounds in one process (the "
        "tables above come from separate processes, minutes apart):",
        "",
        "| contender | p50 ms | p95 ms |",
        "|---|---:|---:|",
    ]
    for name, f in curve["contenders"].items():
        lines.append(f"| {name} | {f['p50_ms']:.2f} | {f['p95_ms']:.2f} |")
    lines.append("")
    conv = r["conversation"]
    lines += [
        "Conversation length (`python -m bench.curves`): full graph turns (scripted model) in "
        f"a conversation of N messages, the thread kept to {conv['max_thread_messages']} "
        "messages and its older checkpoints pruned after the conversation was prepared, as "
        "the README asks of applications (`python -m bench.curves --no-prune` keeps them: "
        "LangGraph's `PostgresSaver` then reads a thread with hundreds of turns of history "
        "more slowly):",
        "",
        "| messages | p50 ms | p95 ms |",
        "|---:|---:|---:|",
    ]
    for length, f in conv["lengths"].items():
        lines.append(f"| {int(length):,} | {f['p50_ms']} | {f['p95_ms']} |")
    drift = r["soak"]["drift"]
    lines += [
        "",
        f"Soak (`python -m bench.soak --turns {r['soak']['turns']}`): turn p50 of the first "
        f"{drift['window_turns']:,} turns {drift['first_p50_ms']} ms, of the last "
        f"{drift['last_p50_ms']} ms"
        + (
            f"; then, timed in alternating turns, the soaked deployment "
            f"{drift['against_fresh']['soaked_p50_ms']} ms and a fresh one (a sibling "
            f"database, after {drift['against_fresh']['fresh_warmup_turns']:,} warm-up turns) "
            f"{drift['against_fresh']['fresh_p50_ms']} ms: {drift['against_fresh']['ratio']}"
            if "against_fresh" in drift
            else ""
        )
        + ". Samples (every tenth of the run; sweeper and `checkpointer.prune` between):",
        "",
        "| turns | connections | RSS MiB | checkpoints | blobs | STM threads | longest thread "
        "| token cache | turn p50/p95 ms |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in r["soak"]["samples"]:
        lines.append(
            f"| {s['turns']:,} | {s['connections']} | {s['rss_mb']} | {s['checkpoints']:,} | "
            f"{s['checkpoint_blobs']:,} | {s['stm_threads']:,} | "
            f"{s['longest_thread_messages']} | {s['caches'].get('token_counts', '')} | "
            f"{s['turn_p50_ms']}/{s['turn_p95_ms']} |"
        )
    growth = r["soak"].get("growth_second_half", {})
    if growth:
        lines += [
            "",
            "Growth over the soak's second half (last sample / middle sample; 1.0 = flat): "
            + ", ".join(f"{k} {v}" for k, v in growth.items())
            + ".",
        ]
    lines += ["", "Raw figures: `bench/results.json`.", END]
    return "\n".join(lines)


def write_results(path: Path, block: str) -> None:
    """Replace the generated block of ``path`` (append it when there is none)."""
    current = path.read_text() if path.exists() else "# kioku benchmark results\n"
    if START in current and END in current:
        before, rest = current.split(START, 1)
        after = rest.split(END, 1)[1]
        path.write_text(before + block + after)
    else:
        path.write_text(current.rstrip() + "\n\n" + block + "\n")


def main(argv: list[str] | None = None) -> None:
    """Run the suite, print the table, write the results."""
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, under a minute")
    parser.add_argument("--json", type=Path, default=HERE / "results.json")
    parser.add_argument("--results", type=Path, default=HERE / "RESULTS.md")
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else FULL
    console = Console(width=None if sys.stdout.isatty() else 200)
    info = machine()
    started = time.perf_counter()
    load_before = os.getloadavg()[0]
    results = run(plan, console)
    results["load_average"] = {"before": load_before, "after": os.getloadavg()[0]}
    results["machine"] = info
    results["data"] = search.data_source()
    results["plan"] = plan.__dict__
    results["seconds"] = round(time.perf_counter() - started, 1)
    console.print(table(rows(plan, results)))
    console.print(f"done in {results['seconds']} s")
    args.json.write_text(json.dumps(results, indent=2, default=str))
    write_results(args.results, markdown(plan, args.quick, info, results))


if __name__ == "__main__":
    main()
