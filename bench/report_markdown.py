"""The generated block of ``bench/RESULTS.md``: written from the results, replaced in place."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import agent_report
from bench.report_rows import FUNCTIONS, GRAPH_PEERS, rows
from bench.steps import Plan
from bench.turn import CURVE_PEERS

START, END = "<!-- kioku-bench:start -->", "<!-- kioku-bench:end -->"


def cell(value: float | None, unit: str) -> str:
    """``value`` with its unit, as a table shows it (empty when there is none)."""
    return "" if value is None else f"{value:,.2f} {unit}".strip()


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
    lines = [
        START,
        *_header_lines(quick, info, r),
        *_row_lines(plan, r),
        "",
        *turn_lines(r["turn_small"]),
        *turn_lines(r["turn_large"]),
        *_curve_lines(r["memory_curve"]),
        *_conversation_lines(r["conversation"]),
        *_soak_lines(r["soak"]),
        "",
        "Raw figures: `bench/results.json`.",
        END,
    ]
    return "\n".join(lines)


def _header_lines(quick: bool, info: dict[str, str], r: dict[str, Any]) -> list[str]:
    """The block's title, command, machine and the agent's headline table."""
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    load = r["load_average"]
    lines = [
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
    return lines


def _row_lines(plan: Plan, r: dict[str, Any]) -> list[str]:
    """Every figure of the table (:func:`bench.report_rows.rows`), a row each."""
    lines = []
    for row in rows(plan, r):
        lines.append(
            f"| {row.figure} | {cell(row.kioku, row.unit)} | {row.peer_name} | "
            f"{cell(row.peer, row.unit)} | {row.ratio} | {row.target} | {row.verdict} |"
        )
    return lines


def _curve_lines(curve: dict[str, Any]) -> list[str]:
    """The turn at each number of memories per scope, kioku beside its peers."""
    lines = [
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
    return lines


def _conversation_lines(conv: dict[str, Any]) -> list[str]:
    """The per-turn graph's turn at each conversation length."""
    lines = [
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
    return lines


def _soak_lines(soak: dict[str, Any]) -> list[str]:
    """The soak's drift and its samples, and what grew over its second half."""
    drift = soak["drift"]
    lines = [
        "",
        f"Soak (`python -m bench.soak --turns {soak['turns']}`): turn p50 of the first "
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
    for s in soak["samples"]:
        lines.append(
            f"| {s['turns']:,} | {s['connections']} | {s['rss_mb']} | {s['checkpoints']:,} | "
            f"{s['checkpoint_blobs']:,} | {s['stm_threads']:,} | "
            f"{s['longest_thread_messages']} | {s['caches'].get('token_counts', '')} | "
            f"{s['turn_p50_ms']}/{s['turn_p95_ms']} |"
        )
    growth = soak.get("growth_second_half", {})
    if growth:
        lines += [
            "",
            "Growth over the soak's second half (last sample / middle sample; 1.0 = flat): "
            + ", ".join(f"{k} {v}" for k, v in growth.items())
            + ".",
        ]
    return lines


def write_results(path: Path, block: str) -> None:
    """Replace the generated block of ``path`` (append it when there is none)."""
    current = path.read_text() if path.exists() else "# kioku benchmark results\n"
    if START in current and END in current:
        before, rest = current.split(START, 1)
        after = rest.split(END, 1)[1]
        path.write_text(before + block + after)
    else:
        path.write_text(current.rstrip() + "\n\n" + block + "\n")
