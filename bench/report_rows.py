"""The suite's table: a row per figure, kioku's beside its peer's, with the target.

The agent's figures first (:mod:`bench.agent_report`), then those timing kioku's functions
called directly (:data:`FUNCTIONS`), then every other step's. Pure: results in, rows out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bench import agent_report
from bench.steps import Plan
from bench.turn import CURVE_PEERS
from kioku._db.vectors import EXACT_SEARCH_MAX_ROWS


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
    return [
        *_per_turn_rows(r),
        *_scale_rows(plan, r),
        *_soak_rows(r["soak"]),
        *_startup_rows(r["startup"]),
        *_search_rows(plan, r),
        *_process_rows(r),
    ]


def _per_turn_rows(r: dict[str, Any]) -> list[Row]:
    """Kioku's per-turn work beside its peers and floors, alone, and its round trips."""
    small = r["turn_small"]
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
    return out + _alone_rows(r["turn_alone"], ours, floor)


def _alone_rows(
    alone: dict[str, Any], ours: dict[str, Any], floor: dict[str, Any] | None
) -> list[Row]:
    """Kioku's turn alone on a quiet machine, and its round trips beside the floor's."""
    out: list[Row] = []
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
    return out


def _scale_rows(plan: Plan, r: dict[str, Any]) -> list[Row]:
    """How a turn grows with the memories per scope and the conversation's length."""
    out: list[Row] = []
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
    return out


def _soak_rows(soak: dict[str, Any]) -> list[Row]:
    """Whether a long run drifts: its last turns against its first, or a fresh deployment."""
    out: list[Row] = []
    drift = soak["drift"]
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
                f"soak: turn p50 after {soak['turns']:,} turns vs a fresh deployment, "
                "alternating turns",
                fresh["soaked_p50_ms"],
                fresh["fresh_p50_ms"],
                "ms",
                "<= 1.1x",
                f"fresh kioku (after {fresh['fresh_warmup_turns']:,} turns)",
                fresh["ratio"] <= 1.1,
            )
        )
    return out


def _startup_rows(up: dict[str, Any]) -> list[Row]:
    """How long commands that need no model take to start."""
    return [
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
    ]


def _search_rows(plan: Plan, r: dict[str, Any]) -> list[Row]:
    """Writes, searches, recall and the short-term lookup, beside LangGraph's store."""
    s, stm = r["search"], r["stm_lookup"]
    ms, recall = s["search_ms"], s["recall_at_10"]
    return [
        *_write_rows(s["writes_per_second"]),
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
    ]


def _write_rows(writes: dict[str, Any]) -> list[Row]:
    """Memories written through the tool path, beside ``PostgresStore`` puts."""
    return [
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
    ]


def _process_rows(r: dict[str, Any]) -> list[Row]:
    """The largest step's memory, and whether isolation held."""
    return [
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
