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
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from bench.corpus import data_source
from bench.report_markdown import cell, markdown, write_results
from bench.report_rows import Row, rows
from bench.steps import FULL, QUICK, STEPS, Plan, run_step

HERE = Path(__file__).resolve().parent


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


def table(lines: list[Row]) -> Table:
    """A rich table of ``lines``."""
    out = Table(title="kioku benchmarks (peers from the same run)")
    for column in ("figure", "kioku", "peer", "value", "kioku/peer", "target", ""):
        out.add_column(column, justify="left" if column in ("figure", "peer") else "right")
    for row in lines:
        out.add_row(
            row.figure,
            cell(row.kioku, row.unit),
            row.peer_name,
            cell(row.peer, row.unit),
            row.ratio,
            row.target,
            row.verdict,
        )
    return out


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
    results["data"] = data_source()
    results["plan"] = plan.__dict__
    results["seconds"] = round(time.perf_counter() - started, 1)
    console.print(table(rows(plan, results)))
    console.print(f"done in {results['seconds']} s")
    args.json.write_text(json.dumps(results, indent=2, default=str))
    write_results(args.results, markdown(plan, args.quick, info, results))


if __name__ == "__main__":
    main()
