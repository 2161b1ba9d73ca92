"""Every benchmark in one command, each figure beside LangGraph's PostgresStore.

Run from a clone after the README's test setup::

    .venv/bin/python -m bench            # the full suite (about 25 minutes)
    .venv/bin/python -m bench --quick    # smaller sizes, under a minute
    .venv/bin/kioku bench [--quick]      # the same

Prints a table, writes ``bench/results.json`` and the generated part of
``bench/RESULTS.md`` (between its ``kioku-bench`` markers).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from bench import isolation, search, soak, turn
from toolkit.embeddings import HashingEmbeddings

HERE = Path(__file__).resolve().parent
START, END = "<!-- kioku-bench:start -->", "<!-- kioku-bench:end -->"


@dataclass(frozen=True)
class Plan:
    """Sizes of one run."""

    search_scale: int
    queries: int
    writes_per_round: int
    small_server: int
    large_server: int
    turns: int
    stm_channels: int
    soak_turns: int
    isolation_cases: int


FULL = Plan(100_000, 100, 100, 100, 100_000, 200, 1000, 10_000, 10_000)
QUICK = Plan(2_000, 20, 10, 100, 2_000, 20, 300, 100, 100)


@dataclass(frozen=True)
class Row:
    """One line of the table: a figure for kioku, the peer's, and the target."""

    figure: str
    kioku: float
    peer: float | None
    unit: str
    target: str = ""

    @property
    def ratio(self) -> str:
        """Kioku ÷ peer (for latencies lower is better, for throughput higher)."""
        return f"{self.kioku / self.peer:.2f}" if self.peer else ""


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
    """Run every benchmark of ``plan`` with progress bars; the raw results."""
    results: dict[str, Any] = {}
    steps: list[tuple[str, Callable[[], Any]]] = [
        ("search", lambda: _search(plan)),
        ("turn_small", lambda: turn.measure_turns(plan.small_server, plan.turns)),
        ("turn_large", lambda: turn.measure_turns(plan.large_server, plan.turns)),
        ("stm_lookup", lambda: turn.measure_stm_lookup(plan.stm_channels, plan.turns)),
        ("isolation", lambda: isolation.run_isolation(plan.isolation_cases)),
    ]
    with Progress(console=console, transient=False) as progress:
        overall = progress.add_task("benchmarks", total=len(steps) + 1)
        # The soak first, so its memory samples start from a fresh process.
        soak_task = progress.add_task("soak", total=plan.soak_turns)
        results["soak"] = soak.soak(
            plan.soak_turns, progress=lambda n: progress.advance(soak_task, n)
        )
        progress.advance(overall)
        for name, step in steps:
            task = progress.add_task(name, total=None)
            start = time.perf_counter()
            results[name] = step()
            results[name]["wall_seconds"] = round(time.perf_counter() - start, 1)
            progress.update(task, total=1, completed=1)
            progress.advance(overall)
    results["peak_rss_mb"] = {
        "benchmark_process": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "isolation_process": round(
            resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1
        ),
    }
    return results


def _search(plan: Plan) -> dict[str, Any]:
    report: dict[str, Any] = {}
    search.run_scale(
        plan.search_scale,
        plan.queries,
        HashingEmbeddings(search.DIM),
        report,
        writes_per_round=plan.writes_per_round,
        show=False,
    )
    return dict(report[str(plan.search_scale)])


def rows(plan: Plan, r: dict[str, Any]) -> list[Row]:
    """The table's lines."""
    s = r["search"]
    ms, recall, writes = s["search_ms"], s["recall_at_10"], s["writes_per_second"]
    small, large, stm = r["turn_small"], r["turn_large"], r["stm_lookup"]
    last = r["soak"]["samples"][-1]
    return [
        Row(
            f"per-turn memory overhead p95, {small['server_memories']} memories per scope",
            small["kioku_p95_ms"],
            small["postgres_store_p95_ms"],
            "ms",
            "<= 15 ms",
        ),
        Row(
            f"per-turn memory overhead p95, {large['server_memories']:,} per server",
            large["kioku_p95_ms"],
            large["postgres_store_p95_ms"],
            "ms",
            "<= 30 ms",
        ),
        Row(
            "tool-path writes (limits <= 10k per scope: no HNSW)",
            writes["kioku_tool_path_without_hnsw"],
            writes["postgres_store_put"],
            "/s",
            ">= 2x peer",
        ),
        Row(
            "tool-path writes (HNSW index kept)",
            writes["kioku_tool_path_with_hnsw"],
            writes["postgres_store_put"],
            "/s",
            ">= 2x peer",
        ),
        Row(
            f"search p50, {plan.search_scale:,} memories, 5% scope",
            ms["kioku_hybrid_p50"],
            ms["postgres_store_p50"],
            "ms",
        ),
        Row(
            f"search p95, {plan.search_scale:,} memories, 5% scope",
            ms["kioku_hybrid_p95"],
            ms["postgres_store_p95"],
            "ms",
            "<= 10 ms",
        ),
        Row("search recall@10 vs exact", recall["kioku"], recall["postgres_store"], "", ">= 0.95"),
        Row(
            "search recall@10 through the HNSW index",
            recall["kioku_hnsw"],
            recall["postgres_store"],
            "",
        ),
        Row(
            f"STM other-channel lookup p95, {stm['channels']:,} channels",
            stm["kioku_p95_ms"],
            stm["postgres_store_p95_ms"],
            "ms",
        ),
        Row(
            f"soak: connections after {last['turns']:,} turns",
            last["connections"],
            None,
            "",
            "no growth",
        ),
        Row("soak: resident memory at the end", last["rss_mb"], None, "MiB", "bounded"),
        Row(
            "peak RSS, benchmark process",
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
        ),
    ]


def table(lines: list[Row]) -> Table:
    """A rich table of ``lines``."""
    out = Table(title="kioku benchmarks (peer: LangGraph PostgresStore, same run)")
    for column in ("figure", "kioku", "PostgresStore", "kioku/peer", "target"):
        out.add_column(column, justify="left" if column == "figure" else "right")
    for row in lines:
        out.add_row(
            row.figure,
            f"{row.kioku:,.2f} {row.unit}".strip(),
            f"{row.peer:,.2f} {row.unit}".strip() if row.peer is not None else "",
            row.ratio,
            row.target,
        )
    return out


def markdown(plan: Plan, quick: bool, info: dict[str, str], r: dict[str, Any]) -> str:
    """The generated part of RESULTS.md."""
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        START,
        f"## Benchmark suite ({'quick' if quick else 'full'}) — {when}",
        "",
        "Command (from the repository root, after the README's test setup):",
        "",
        "```bash",
        f".venv/bin/python -m bench{' --quick' if quick else ''}",
        "```",
        "",
        f"Machine: {info['cpu']}, {info['memory']} RAM, Python {info['python']}, "
        f"{info['system']}; commit {info['commit']}. Data: {r.get('data', 'n/a')}. Timings "
        "alternate between kioku and the peer in rounds, so a noisy neighbour slows both alike.",
        "",
        "| figure | kioku | PostgresStore | kioku/peer | target |",
        "|---|---:|---:|---:|---|",
    ]
    for row in rows(plan, r):
        peer = f"{row.peer:,.2f} {row.unit}".strip() if row.peer is not None else ""
        lines.append(
            f"| {row.figure} | {row.kioku:,.2f} {row.unit} | {peer} | {row.ratio} | "
            f"{row.target} |".replace("  ", " ")
        )
    lines += [
        "",
        "Soak samples (every tenth of the run; sweeper and `checkpointer.prune` between):",
        "",
        "| turns | connections | RSS MiB | checkpoints | blobs | STM threads | turn p50/p95 ms |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in r["soak"]["samples"]:
        lines.append(
            f"| {s['turns']:,} | {s['connections']} | {s['rss_mb']} | {s['checkpoints']:,} | "
            f"{s['checkpoint_blobs']:,} | {s['stm_threads']:,} | "
            f"{s['turn_p50_ms']}/{s['turn_p95_ms']} |"
        )
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
    console = Console()
    info = machine()
    started = time.perf_counter()
    results = run(plan, console)
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
