"""What each part of kioku's agent turn costs: the Quickstart agent beside itself, changed.

Issue #36's direct-path target (kioku's whole turn at or below LangMem's) is MISSED; this
says where the difference is, by taking one part away at a time. Every contender runs the
agent of :mod:`bench.agent` (100 memories per scope, the same scripted model, one memory
tool call a turn) in alternating 5-turn rounds, the order reversed each round:

- ``quickstart``: kioku as the README's Quickstart builds it (the reference);
- ``no ranking``: memory-block budgets so large that nothing overflows, so nothing is
  ranked by the message (every memory is rendered: a little more text, no ranking);
- ``top-10 budgets``: memory-block budgets of 200 tokens: about 7 memories a block, 14 in
  all, about what the peers' top 10 shows (still ranked: every block overflows), so the
  prompt holds a sixth of the Quickstart's memory text;
- ``no capture``: the short-term-memory capture after each turn skipped;
- ``in-memory checkpointer``: LangGraph's ``InMemorySaver`` instead of
  ``store.checkpointer()`` (what checkpointing to PostgreSQL costs the turn);
- ``langmem``, ``bare``: the peers of :mod:`bench.agent`, on ``PostgresSaver``, and
  ``bare in-memory``: the bare agent on ``InMemorySaver``.

Prints each one's p50 and p95, its difference from ``quickstart`` and the memory tokens its
prompt held, with the load average. ``--delay-ms N`` runs every contender's connections
through :mod:`bench.delay_proxy` (N ms each way: a database across a network).
These are what-ifs, not products: each change gives up something a user has.

Run: .venv/bin/python -m bench.agent_whatif [--turns 300] [--delay-ms 1]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from bench import agent_peers
from bench.agent_data import setups
from bench.agent_kioku import (
    KiokuSetup,
    build_kioku,
    preload,
)
from bench.agent_model import Contender
from bench.agent_rounds import alternate, loadavg, stepper, summary
from bench.common import bench_database
from bench.delay_proxy import delayed
from bench.stages import patched
from kioku import ContextBudgets
from kioku._stm.store import ShortTermMemory

PER_SCOPE = 100
UNBOUNDED = ContextBudgets(server_memories=1_000_000, personal_memories=1_000_000)
"""Budgets no block of :data:`PER_SCOPE` memories overflows."""
TOP_10 = ContextBudgets(server_memories=200, personal_memories=200)
"""Budgets that show about 7 memories a block (14 in all), about the peers' top 10."""


class Switch:
    """Whether the turn under way skips the capture (set around one contender's turns)."""

    def __init__(self) -> None:
        """Off: captures run."""
        self.on = False

    def wrapper(self, capture: Callable[..., Any]) -> Callable[..., Any]:
        """``ShortTermMemory.capture``, skipped while the switch is on."""

        def switched(*args: Any, **kwargs: Any) -> Any:
            return True if self.on else capture(*args, **kwargs)

        return switched

    @contextmanager
    def turned_on(self) -> Iterator[None]:
        """The switch on for the duration."""
        self.on = True
        try:
            yield
        finally:
            self.on = False


def contenders(setup: KiokuSetup, peers: Any, url: str) -> dict[str, Contender]:
    """Every contender of the module docstring (``no capture`` skips through a :class:`Switch`)."""
    return {
        "quickstart": build_kioku(setup, url, "whatif-quickstart"),
        "no ranking": build_kioku(setup, url, "whatif-no-ranking", budgets=UNBOUNDED),
        "top-10 budgets": build_kioku(setup, url, "whatif-top-10", budgets=TOP_10),
        "no capture": build_kioku(setup, url, "whatif-no-capture"),
        "in-memory checkpointer": build_kioku(
            setup, url, "whatif-in-memory", checkpointer=InMemorySaver()
        ),
        "langmem": agent_peers.BUILDERS["langmem"](peers, url),
        "bare": agent_peers.build_bare(peers, url),
        "bare in-memory": agent_peers.build_bare(peers, url, InMemorySaver()),
    }


def measure(turns: int, delay_ms: float = 0) -> dict[str, Any]:
    """Each contender's p50/p95 (ms) and the load average before and after.

    With ``delay_ms``, every contender connects through a delay proxy (loading does not).
    """
    result: dict[str, Any] = {"load_before": loadavg()}
    switch = Switch()
    with bench_database("kioku_bench_agent_whatif") as url, ExitStack() as stack:
        setup, peers = setups(url, PER_SCOPE)
        preload(setup)
        agent_peers.PRELOADS["langmem"](peers)
        connect_url = stack.enter_context(delayed(url, delay_ms)) if delay_ms else url
        stack.enter_context(patched(ShortTermMemory, "capture", switch.wrapper))
        built = contenders(setup, peers, connect_url)
        for contender in built.values():
            stack.callback(contender.close)
        last: dict[str, dict[str, Any]] = {name: {} for name in built}
        runs: dict[str, Callable[[], object]] = {
            name: stepper(contender, last[name]) for name, contender in built.items()
        }
        plain = runs["no capture"]

        def without_capture() -> object:
            with switch.turned_on():
                return plain()

        runs["no capture"] = without_capture
        samples = alternate(runs, turns)
    result["contenders"] = {
        name: {**summary(times), "memory_tokens": built[name].memory_tokens(last[name]["state"])}
        for name, times in samples.items()
    }
    result["load_after"] = loadavg()
    return result


def main(argv: list[str] | None = None) -> None:
    """Print the what-ifs as a markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300, help="timed turns per contender")
    parser.add_argument(
        "--delay-ms", type=float, default=0, help="each way, through a delay proxy (0: direct)"
    )
    args = parser.parse_args(argv)
    result = measure(args.turns, args.delay_ms)
    print(f"load average before {result['load_before']}, after {result['load_after']}")
    reference = result["contenders"]["quickstart"]
    print(
        "| contender | p50 ms | p95 ms | p50 vs quickstart ms | memory tokens |\n"
        "|---|---:|---:|---:|---:|"
    )
    for name, f in result["contenders"].items():
        change = f["p50_ms"] - reference["p50_ms"]
        print(
            f"| {name} | {f['p50_ms']:.2f} | {f['p95_ms']:.2f} | {change:+.2f} "
            f"| {f['memory_tokens']} |"
        )


if __name__ == "__main__":
    main()
