"""The benchmark suite's steps and sizes: what ``python -m bench`` runs, one process each."""

from __future__ import annotations

import resource
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench import agent, curves, isolation, search, soak, startup, turn, turn_alone
from bench.corpus import DIM
from bench.peers import PEERS
from kioku._embeddings import HashingEmbeddings


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
    conversation_lengths: tuple[int, int] = (10, 1000)
    conversation_turns: int = 100
    quiet_wait_s: float = turn_alone.QUIET_WAIT_S
    """How long the idle-machine step waits at most for the machine to go quiet."""
    agent_plan: agent.AgentPlan = agent.FULL
    """Sizes of the headline step: whole ``create_agent`` turns (:mod:`bench.agent`)."""


FULL = Plan(100_000, 100, 100, 100, 10_000, 200, 1000, 10_000, 10_000)
QUICK = Plan(2_000, 20, 10, 100, 2_000, 25, 300, 200, 100, (10, 200), 25, 60.0, agent.QUICK)

FUNCTION_PEERS = tuple(name for name in PEERS if name not in ("langmem", "mem0"))
"""The peers of the kioku-functions-only turn: the same work without a checkpointed graph
(LangMem's and Mem0's turns there run one; :mod:`bench.agent` compares whole agents)."""


STEPS = (
    "agent",
    "soak",
    "startup",
    "turn_alone",
    "turn_small",
    "turn_large",
    "memory_curve",
    "conversation",
    "search",
    "stm_lookup",
    "isolation",
)
"""The suite's steps, in the order they run."""


def run_step(name: str, plan: Plan) -> dict[str, Any]:
    """One step's raw results, and the peak RSS of the process that ran it."""
    steps: dict[str, Callable[[], dict[str, Any]]] = {
        "agent": lambda: agent.measure(plan.agent_plan),
        "soak": lambda: soak.soak(plan.soak_turns),
        "startup": lambda: dict(startup.measure_startup()),
        "turn_alone": lambda: turn_alone.measure_alone(
            plan.small_server, 3 * plan.turns, plan.quiet_wait_s
        ),
        "turn_small": lambda: turn.measure_turns(
            plan.small_server, plan.turns, which=FUNCTION_PEERS
        ),
        "turn_large": lambda: turn.measure_turns(
            plan.large_server, plan.turns, which=FUNCTION_PEERS
        ),
        "memory_curve": lambda: turn.measure_memory_count(
            (plan.small_server, plan.large_server), plan.turns
        ),
        "conversation": lambda: curves.measure_conversation_length(
            plan.conversation_lengths, plan.conversation_turns
        ),
        "search": lambda: search_step(plan),
        "stm_lookup": lambda: turn.measure_stm_lookup(plan.stm_channels, plan.turns),
        "isolation": lambda: isolation.run_isolation(plan.isolation_cases),
    }
    start = time.perf_counter()
    result = steps[name]()
    result["wall_seconds"] = round(time.perf_counter() - start, 1)
    result["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    result["children_peak_rss_mb"] = round(children / 1024, 1)
    return result


def search_step(plan: Plan) -> dict[str, Any]:
    """Search latency, recall and write throughput at the plan's scale."""
    report: dict[str, Any] = {}
    search.run_scale(
        plan.search_scale,
        plan.queries,
        HashingEmbeddings(DIM),
        report,
        writes_per_round=plan.writes_per_round,
        show=False,
    )
    return dict(report[str(plan.search_scale)])
