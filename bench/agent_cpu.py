"""Where an agent turn's time and CPU go: kioku, LangMem and the bare agent (issue #36).

The agents of :mod:`bench.agent` (100 memories per scope, the same scripted model), in
alternating rounds (order reversed each round). Per contender: the whole turn's wall
time and the CPU time the process spent on it (every thread: LangGraph writes
checkpoints in threads of its own), p50 and mean; and the memory work inside the turn,
each part's wall time and the CPU time of the thread that ran it:

- kioku: the context build, the memory tool, the capture step;
- LangMem: the search before the model, the memory tool.

``--capture-aside`` is a what-if: kioku's capture handed to a thread of its own and not
waited for (as if it cost the turn nothing), to see how much of the turn it holds up.

Run: .venv/bin/python -m bench.agent_cpu [--turns 300] [--capture-aside]
"""

from __future__ import annotations

import argparse
import functools
import resource
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from typing import Any

from langchain_core.tools import BaseTool

from bench.agent_data import setups
from bench.agent_kioku import build_kioku, preload
from bench.agent_model import Contender
from bench.agent_peers import BUILDERS, PRELOADS, MemoryPrompt
from bench.agent_rounds import TURNS_PER_ROUND, WARMUP_TURNS, loadavg
from bench.common import bench_database
from bench.stages import patched
from kioku._context_build.build import ContextBuilder
from kioku._stm.store import ShortTermMemory

PER_SCOPE = 100
PARTS: tuple[tuple[Any, str, str], ...] = (
    (ContextBuilder, "build", "kioku context build"),
    (ShortTermMemory, "capture", "kioku capture"),
    (MemoryPrompt, "_memories", "langmem search"),
    (BaseTool, "invoke", "memory tool"),
)
"""(owner, attribute, label): the parts of a turn timed inside it."""

Spent = dict[str, list[float]]
"""Label → [wall seconds, thread CPU seconds] of the turn under way."""


def process_cpu() -> float:
    """CPU seconds this process has used, every thread, user and system."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def timed(label: str, spent: Spent) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A wrapper adding each call's wall and thread CPU time to ``spent[label]``."""

    def wrap(original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def run(*args: Any, **kwargs: Any) -> Any:
            wall, cpu = time.perf_counter(), time.thread_time()
            try:
                return original(*args, **kwargs)
            finally:
                totals = spent.setdefault(label, [0.0, 0.0])
                totals[0] += time.perf_counter() - wall
                totals[1] += time.thread_time() - cpu

        return run

    return wrap


def aside(pool: ThreadPoolExecutor) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A capture started in ``pool`` and not waited for (``--capture-aside``)."""

    def wrap(original: Callable[..., Any]) -> Callable[..., Any]:
        def started(*args: Any, **kwargs: Any) -> bool:
            pool.submit(original, *args, **kwargs)
            return True

        return started

    return wrap


def rounds(contenders: dict[str, Contender], turns: int, spent: Spent) -> dict[str, Any]:
    """Each contender's turns in alternating rounds: every figure's samples (ms)."""
    samples: dict[str, dict[str, list[float]]] = {n: defaultdict(list) for n in contenders}
    for contender in contenders.values():
        for i in range(WARMUP_TURNS):
            contender.turn(i)
    order = list(contenders)
    for number in range(max(1, turns // TURNS_PER_ROUND)):
        for name in order:
            for j in range(TURNS_PER_ROUND):
                spent.clear()
                cpu, wall = process_cpu(), time.perf_counter()
                contenders[name].turn(WARMUP_TURNS + number * TURNS_PER_ROUND + j)
                samples[name]["turn wall"].append((time.perf_counter() - wall) * 1000)
                samples[name]["turn CPU (process)"].append((process_cpu() - cpu) * 1000)
                for label, (part_wall, part_cpu) in spent.items():
                    samples[name][f"{label} wall"].append(part_wall * 1000)
                    samples[name][f"{label} CPU (its thread)"].append(part_cpu * 1000)
        order.reverse()
    return samples


def measure(turns: int, capture_aside: bool) -> dict[str, Any]:
    """Every figure of the module docstring, with the load average before and after."""
    result: dict[str, Any] = {"load_before": loadavg()}
    spent: Spent = {}
    with bench_database("kioku_bench_agent_cpu") as url, ExitStack() as stack:
        kioku, peers = setups(url, PER_SCOPE)
        preload(kioku)
        PRELOADS["langmem"](peers)
        contenders = {"kioku": build_kioku(kioku, url)}
        stack.callback(contenders["kioku"].close)
        for name in ("langmem", "bare"):
            contenders[name] = BUILDERS[name](peers, url)
            stack.callback(contenders[name].close)
        if capture_aside:  # first, so that the capture is timed as the turn waits for it
            pool = stack.enter_context(ThreadPoolExecutor(1, "capture-aside"))
            stack.enter_context(patched(ShortTermMemory, "capture", aside(pool)))
        for owner, name, label in PARTS:
            stack.enter_context(patched(owner, name, timed(label, spent)))
        samples = rounds(contenders, turns, spent)
    result["figures"] = {
        name: {
            figure: (round(statistics.median(values), 2), round(statistics.mean(values), 2))
            for figure, values in figures.items()
        }
        for name, figures in samples.items()
    }
    result["load_after"] = loadavg()
    return result


def main(argv: list[str] | None = None) -> None:
    """Print each contender's figures: p50 and mean (ms)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--capture-aside", action="store_true")
    args = parser.parse_args(argv)
    result = measure(args.turns, args.capture_aside)
    print(f"load average before {result['load_before']}, after {result['load_after']}")
    print("| contender | figure | p50 ms | mean ms |\n|---|---|---:|---:|")
    for name, figures in result["figures"].items():
        for figure, (p50, mean) in figures.items():
            print(f"| {name} | {figure} | {p50:.2f} | {mean:.2f} |")


if __name__ == "__main__":
    main()
