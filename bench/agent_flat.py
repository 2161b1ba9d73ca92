"""kioku's flatness through the Quickstart agent: memories per scope, conversation length.

Four kioku agents alternate in rounds in one process: at ``small`` and at ``large``
memories per scope (each size in its own database on one server, the thread trimmed as
usual), and on two conversations of ``short`` and ``long`` messages of history (at
``small`` per scope). A conversation is prepared by running its turns through the agent,
its older checkpoints are then pruned (``keep_latest``, as the README asks of
applications), and every timed turn starts from that prepared checkpoint, so the history
does not change while it is measured.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from bench.agent_data import setups
from bench.agent_kioku import KiokuSetup, kioku_agent, kioku_store, preload, updatable_ids
from bench.agent_model import Contender
from bench.agent_rounds import alternate, loadavg, stepper, summary
from bench.common import new_database

MESSAGES_PER_TURN = 4
"""A turn adds the user message, the tool call, the tool's answer and the reply."""


@contextmanager
def preloaded(server_url: str, name: str, per_scope: int) -> Iterator[KiokuSetup]:
    """A new database ``name`` on ``server_url``'s server, kioku's memories loaded."""
    with new_database(server_url, name) as url:
        setup, _ = setups(url, per_scope)
        preload(setup)
        yield setup


def converse(contender: Contender, store: Any, messages: int) -> int:
    """Run the turns of a ``messages``-message history; start every later turn from there.

    Returns the messages the history holds (whole turns, rounded up).
    """
    turns = -(-messages // MESSAGES_PER_TURN)
    for i in range(turns):
        contender.turn(-1 - i)
    thread = contender.config["configurable"]["thread_id"]
    store.checkpointer().prune([thread], strategy="keep_latest")
    contender.config = contender.agent.get_state(contender.config).config
    return turns * MESSAGES_PER_TURN


def measure_flatness(
    server_url: str, turns: int, sizes: tuple[int, int], history: tuple[int, int]
) -> dict[str, Any]:
    """p50/p95 of the four agents, and the two ratios (large/small, long/short)."""
    small, large = sizes
    with ExitStack() as stack:
        stores = {}
        for size in sizes:
            setup = stack.enter_context(preloaded(server_url, f"kioku_bench_agent_{size}", size))
            stores[size] = kioku_store(setup, setup.url)
            stack.callback(stores[size].close)
        agents = {
            f"{size:,} per scope": kioku_agent(stores[size], "flat", updatable_ids(stores[size]))
            for size in sizes
        }
        held = {}
        for length in history:
            agent = kioku_agent(stores[small], f"history-{length}", updatable_ids(stores[small]))
            held[length] = converse(agent, stores[small], length)
            agents[f"history {length:,}"] = agent
        load_before = loadavg()
        samples = alternate({name: stepper(a, {}) for name, a in agents.items()}, turns)
        load_after = loadavg()
    figures = {name: summary(s) for name, s in samples.items()}
    p50 = {name: f["p50_ms"] for name, f in figures.items()}
    return {
        "sizes": list(sizes),
        "history": list(history),
        "history_messages": {str(k): v for k, v in held.items()},
        "contenders": figures,
        "load_before": load_before,
        "load_after": load_after,
        "memories_ratio_p50": round(p50[f"{large:,} per scope"] / p50[f"{small:,} per scope"], 3),
        "history_ratio_p50": round(
            p50[f"history {history[1]:,}"] / p50[f"history {history[0]:,}"], 3
        ),
    }
