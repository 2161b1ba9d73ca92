"""Whole ``create_agent`` turns with memory, the model excluded (issue #36): the users' path.

Four agents on one PostgreSQL database, each run by the same scripted model (one memory
tool call, then a text answer, every turn): kioku exactly as the README Quickstart, LangMem
and Mem0 OSS as their docs set them up, and a bare agent with no memory (the zero line);
:mod:`bench.agent_kioku` and :mod:`bench.agent_peers` say exactly what each does. The same
precomputed embeddings, the same thread trimming (20 messages) and 100 memories per scope
for every memory contender.

Figures: p50/p95 turn time in alternating rounds (order reversed every round, warm-up
turns discarded), overhead over the bare agent, round trips per turn (counted at the
socket by :class:`bench.roundtrips.RoundTripProxy`), checkpoint rows written per turn
(LangGraph's ``checkpoints`` table, every thread), and the memory tokens put before the
model (cl100k). The timed run is repeated with every connection going through
:mod:`bench.delay_proxy` (1 ms each way: a database across a network). Then kioku's
flatness through the same agent (:mod:`bench.agent_flat`): 10,000 vs 100 memories per
scope, and a 1,000- vs a 10-message conversation history.

Run: .venv/bin/python -m bench.agent [--quick] [--turns 200] [--delay-ms 1]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time
from contextlib import AbstractContextManager, ExitStack
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import psycopg

from bench import agent_report
from bench.agent_counts import count_contenders
from bench.agent_data import setups
from bench.agent_flat import measure_flatness
from bench.agent_kioku import KiokuSetup, build_kioku, preload
from bench.agent_model import Contender
from bench.agent_peers import BUILDERS, PEER_NAMES, PRELOADS, PeerSetup
from bench.agent_rounds import alternate, loadavg, stepper, summary
from bench.common import bench_database, libpq
from bench.delay_proxy import delayed

PER_SCOPE = 100
HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class AgentPlan:
    """Sizes of one run."""

    turns: int = 200
    """Timed turns per contender in each run (direct, delayed) and in the flatness step."""
    sizes: tuple[int, int] = (100, 10_000)
    """Memories per scope compared for flatness."""
    history: tuple[int, int] = (10, 1000)
    """Conversation lengths (messages) compared for flatness."""
    delay_ms: float = 1.0
    """Latency the delayed run adds each way."""


FULL = AgentPlan()
QUICK = AgentPlan(turns=20, sizes=(100, 1000), history=(10, 100))


def preload_all(kioku: KiokuSetup, peers: PeerSetup) -> None:
    """Every contender's memories into the database."""
    preload(kioku)
    for name in PEER_NAMES:
        PRELOADS[name](peers)


def build_all(kioku: KiokuSetup, peers: PeerSetup, connect_url: str) -> dict[str, Contender]:
    """Every contender, its connections opened through ``connect_url``."""
    built = {"kioku": build_kioku(kioku, connect_url)}
    try:
        for name in PEER_NAMES:
            built[name] = BUILDERS[name](peers, connect_url)
    except BaseException:
        for contender in built.values():
            contender.close()
        raise
    return built


def timed_run(
    kioku: KiokuSetup, peers: PeerSetup, turns: int, through: AbstractContextManager[str]
) -> dict[str, Any]:
    """Every contender's turns, alternating, connections through ``through``'s URL."""
    load_before = loadavg()
    with through as connect_url, ExitStack() as stack:
        contenders = build_all(kioku, peers, connect_url)
        for contender in contenders.values():
            stack.callback(contender.close)
        last: dict[str, dict[str, Any]] = {name: {} for name in contenders}
        samples = alternate({n: stepper(c, last[n]) for n, c in contenders.items()}, turns)
        figures = {
            name: {**summary(samples[name]), "memory_tokens": c.memory_tokens(last[name]["state"])}
            for name, c in contenders.items()
        }
    return {"contenders": figures, "load_before": load_before, "load_after": loadavg()}


def added_rtt_ms(url: str, delay_ms: float, queries: int = 200) -> float:
    """How much longer a ``SELECT 1`` takes through the delay proxy (median, ms)."""

    def median_ms(target: str) -> float:
        with psycopg.connect(libpq(target), autocommit=True) as conn:
            samples = []
            for _ in range(queries):
                start = time.perf_counter()
                conn.execute("SELECT 1").fetchone()
                samples.append((time.perf_counter() - start) * 1000)
        return statistics.median(samples)

    with delayed(url, delay_ms) as proxy_url:
        return round(median_ms(proxy_url) - median_ms(url), 2)


def measure(plan: AgentPlan) -> dict[str, Any]:
    """Every figure of the agent benchmark (module docstring)."""
    result: dict[str, Any] = {"per_scope": PER_SCOPE, "plan": asdict(plan)}
    result["load_before"] = loadavg()
    started = time.perf_counter()
    with bench_database("kioku_bench_agent") as url:
        kioku, peers = setups(url, PER_SCOPE)
        preload_all(kioku, peers)
        result["direct"] = timed_run(kioku, peers, plan.turns, contextlib.nullcontext(url))
        result["delayed"] = timed_run(kioku, peers, plan.turns, delayed(url, plan.delay_ms))
        result["delayed"]["added_rtt_ms"] = added_rtt_ms(url, plan.delay_ms)
        result["counts"] = count_contenders(url, lambda proxy: build_all(kioku, peers, proxy))
        result["flatness"] = measure_flatness(url, plan.turns, plan.sizes, plan.history)
    result["load_after"] = loadavg()
    result["seconds"] = round(time.perf_counter() - started, 1)
    return result


def main(argv: list[str] | None = None) -> None:
    """Measure, print the tables, write the raw figures (``bench/agent-results.json``)."""
    parser = argparse.ArgumentParser(prog="python -m bench.agent", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, a minute or two")
    parser.add_argument("--turns", type=int, help="timed turns per contender per run")
    parser.add_argument("--delay-ms", type=float, default=1.0, help="added latency each way")
    parser.add_argument("--json", type=Path, default=HERE / "agent-results.json")
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else FULL
    plan = AgentPlan(args.turns or plan.turns, plan.sizes, plan.history, args.delay_ms)
    result = measure(plan)
    given = sys.argv[1:] if argv is None else argv
    result["command"] = " ".join([".venv/bin/python -m bench.agent", *given])
    print(agent_report.text(result))
    args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
