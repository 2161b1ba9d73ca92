"""The Quickstart agent's turn at two commits, alternating in one run (before/after a change).

Each commit is checked out (``git worktree``) and runs in a worker process of its own
with its own database on one server: the agent of ``bench.agent_kioku`` at 100 memories
per scope (or ``--per-scope``), as that commit's bench builds it. The workers take turns,
five turns at a time and the order reversed each round, like ``bench.agent``'s
contenders; p50/p95 per commit and their ratio are printed with the load average before
and after.

Run: .venv/bin/python -m bench.versions BEFORE [AFTER] [--turns 300] [--workers 1]
[--delay-ms 1] [--per-scope 100]
(AFTER defaults to the working tree's HEAD; a commit from before 876adc9, when the library
lived in ``toolkit/`` itself, is laid out as ``kioku/`` for its worker.)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from bench.agent_rounds import TURNS_PER_ROUND, loadavg, summary
from bench.common import bench_database, new_database
from bench.delay_proxy import delayed

ROOT = Path(__file__).resolve().parents[1]

WORKER = """
import json, sys, time
from bench.agent_data import setups
from bench.agent_kioku import build_kioku, preload
url = sys.argv[1]
kioku, _ = setups(url, int(sys.argv[3]))
preload(kioku)
contender = build_kioku(kioku, sys.argv[2])
for turn in range(10):
    contender.turn(turn)
print("ready", flush=True)
turn = 10
for line in sys.stdin:
    times = []
    for _ in range(int(line)):
        start = time.perf_counter()
        contender.turn(turn)
        times.append((time.perf_counter() - start) * 1000)
        turn += 1
    print(json.dumps(times), flush=True)
contender.close()
"""


def import_path(checkout: Path, scratch: Path) -> str:
    """``PYTHONPATH`` making ``checkout``'s ``kioku`` and ``bench`` importable."""
    if (checkout / "toolkit" / "kioku").is_dir():
        return f"{checkout / 'toolkit'}{os.pathsep}{checkout}"
    package = scratch / "kioku"  # the old layout: toolkit/ is kioku, graphs/ is kioku.graphs
    package.mkdir()
    for entry in (checkout / "toolkit").iterdir():
        (package / entry.name).symlink_to(entry)
    (package / "graphs").symlink_to(checkout / "graphs")
    return f"{scratch}{os.pathsep}{checkout}"


@contextlib.contextmanager
def checked_out(commit: str) -> Iterator[str]:
    """A ``PYTHONPATH`` for ``commit``, checked out in a temporary worktree."""
    with tempfile.TemporaryDirectory(prefix="kioku-version-") as scratch:
        checkout = Path(scratch) / "checkout"
        git = ["git", "-C", str(ROOT)]
        subprocess.run([*git, "worktree", "add", "--detach", str(checkout), commit], check=True)
        try:
            shim = Path(scratch) / "shim"
            shim.mkdir()
            yield import_path(checkout, shim)
        finally:
            subprocess.run([*git, "worktree", "remove", "--force", str(checkout)], check=True)


class Worker:
    """One commit's agent in a process of its own, running turns when asked."""

    def __init__(self, path: str, url: str, connect_url: str, per_scope: int = 100) -> None:
        """Start the worker and wait until its agent is warm.

        ``per_scope`` memories are loaded through ``url``; the agent connects through
        ``connect_url``.
        """
        env = {**os.environ, "PYTHONPATH": path}
        self.process = subprocess.Popen(
            [sys.executable, "-c", WORKER, url, connect_url, str(per_scope)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=tempfile.gettempdir(),
        )
        assert self.process.stdout is not None
        if self.process.stdout.readline().strip() != "ready":
            raise RuntimeError("the worker did not start; see its output above")

    def turns(self, count: int) -> list[float]:
        """Times (ms) of the agent's next ``count`` turns."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(f"{count}\n")
        self.process.stdin.flush()
        return [float(t) for t in json.loads(self.process.stdout.readline())]

    def close(self) -> None:
        """End the worker."""
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=120)


def compare(
    before: str,
    after: str,
    turns: int,
    workers: int = 1,
    delay_ms: float = 0.0,
    per_scope: int = 100,
) -> dict[str, object]:
    """p50/p95 of each commit's turns, run alternately (module docstring).

    With ``delay_ms``, each agent's connections go through a delay proxy of its own
    (:mod:`bench.delay_proxy`: a database across a network), as in ``bench.agent``.

    With ``workers`` > 1 each commit runs in that many processes (each with a database of
    its own), taking turns with the other commit's: a process's own speed differs from
    the next one's by a few percent, which one process per commit counts as the change's.
    Each commit's figures pool its processes' turns; ``per_worker_p50_ms`` shows the spread.
    """
    load_before = loadavg()
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(bench_database("kioku_bench_versions"))
        running: list[tuple[str, Worker]] = []
        for name, commit in (("before", before), ("after", after)):
            path = stack.enter_context(checked_out(commit))
            for index in range(workers):
                url = stack.enter_context(new_database(server, f"kioku_bench_{name}_{index}"))
                connect = stack.enter_context(delayed(url, delay_ms)) if delay_ms else url
                worker = Worker(path, url, connect, per_scope)
                stack.callback(worker.close)
                running.append((name, worker))
        order = [
            running[i]
            for pair in zip(range(workers), range(workers, 2 * workers), strict=True)
            for i in pair
        ]
        samples: dict[str, list[float]] = {"before": [], "after": []}
        per_worker: dict[int, list[float]] = {id(w): [] for _, w in running}
        for _ in range(max(1, turns // (TURNS_PER_ROUND * workers))):
            for name, worker in order:
                times = worker.turns(TURNS_PER_ROUND)
                samples[name] += times
                per_worker[id(worker)] += times
            order.reverse()
    figures = {name: summary(times) for name, times in samples.items()}
    spread = {
        name: [summary(per_worker[id(w)])["p50_ms"] for n, w in running if n == name]
        for name in samples
    }
    return {
        "commits": {"before": before, "after": after},
        **figures,
        "ratio_p50": round(figures["after"]["p50_ms"] / figures["before"]["p50_ms"], 3),
        "ratio_p95": round(figures["after"]["p95_ms"] / figures["before"]["p95_ms"], 3),
        "workers_per_commit": workers,
        "delay_ms_each_way": delay_ms,
        "memories_per_scope": per_scope,
        "per_worker_p50_ms": spread,
        "load_before": load_before,
        "load_after": loadavg(),
    }


def main(argv: list[str] | None = None) -> None:
    """Print the comparison as JSON."""
    parser = argparse.ArgumentParser(prog="python -m bench.versions", description=__doc__)
    parser.add_argument("before", help="the commit before the change")
    parser.add_argument("after", nargs="?", default="HEAD", help="the commit after (HEAD)")
    parser.add_argument("--turns", type=int, default=300, help="timed turns per commit")
    parser.add_argument(
        "--workers", type=int, default=1, help="processes per commit, taking turns (default 1)"
    )
    parser.add_argument(
        "--delay-ms", type=float, default=0.0, help="latency added each way (default none)"
    )
    parser.add_argument(
        "--per-scope", type=int, default=100, help="memories per scope (default 100)"
    )
    args = parser.parse_args(argv)
    result = compare(
        args.before, args.after, args.turns, args.workers, args.delay_ms, args.per_scope
    )
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
