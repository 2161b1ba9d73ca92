"""The agent benchmark's figures as tables, and its targets (issue #36, item 2) met or MISSED."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MEMORY_PEERS = ("langmem", "mem0")
RUNS = {"direct": "direct", "delayed": "across a network"}


@dataclass(frozen=True)
class Target:
    """One target: kioku's figure, the limit it is held to, and the load it ran under."""

    figure: str
    kioku: float
    limit: float
    against: str
    """What the limit is (e.g. ``mem0's p50``, ``bare + 5``)."""
    load: str
    unit: str = ""
    peer_name: str = ""
    """Whose figure the limit derives from (a peer, the bare agent), if anyone's."""
    peer: float | None = None
    """That figure."""

    @property
    def met(self) -> bool:
        """Whether kioku's figure is within the limit."""
        return self.kioku <= self.limit

    @property
    def verdict(self) -> str:
        """``met`` or ``MISSED``."""
        return "met" if self.met else "MISSED"


def fastest_peer(run: dict[str, Any], q: str) -> tuple[str, float]:
    """The memory peer with the lowest ``q`` (``p50``/``p95``) turn time in ``run``."""
    peers = {n: run["contenders"][n][f"{q}_ms"] for n in MEMORY_PEERS if n in run["contenders"]}
    name = min(peers, key=peers.__getitem__)
    return name, peers[name]


def overhead(run: dict[str, Any], name: str) -> tuple[float, float]:
    """(ms, ratio) of ``name``'s p50 over the bare agent's."""
    mine, bare = run["contenders"][name]["p50_ms"], run["contenders"]["bare"]["p50_ms"]
    return round(mine - bare, 2), round(mine / bare, 2)


def targets(result: dict[str, Any]) -> list[Target]:
    """Item 2's targets, each with the load average of the run that produced it."""
    out: list[Target] = []
    for key, label in RUNS.items():
        run = result[key]
        for q in ("p50", "p95"):
            name, peer = fastest_peer(run, q)
            out.append(
                Target(
                    f"agent turn {q}, {result['per_scope']} per scope, {label}",
                    run["contenders"]["kioku"][f"{q}_ms"],
                    peer,
                    f"<= fastest memory peer ({name})",
                    run["load_after"],
                    "ms",
                    name,
                    peer,
                )
            )
    counts = result["counts"]["per_turn"]
    for figure, key, slack in (
        ("round trips", "round_trips", 5),
        ("checkpoints", "checkpoints", 1),
    ):
        out.append(
            Target(
                f"{figure} per turn",
                counts["kioku"][key],
                counts["bare"][key] + slack,
                f"<= bare agent's {counts['bare'][key]:g} + {slack}",
                result["direct"]["load_after"],
                peer_name="bare agent",
                peer=counts["bare"][key],
            )
        )
    flat = result["flatness"]
    (small, large), (short, long) = flat["sizes"], flat["history"]
    for figure, key, limit in (
        (f"turn p50, {large:,} vs {small} memories per scope", "memories_ratio_p50", 1.5),
        (f"turn p50, {long:,}- vs {short}-message history", "history_ratio_p50", 1.2),
    ):
        out.append(Target(figure, flat[key], limit, f"<= {limit}x", flat["load_after"], "x"))
    return out


def contender_rows(result: dict[str, Any], key: str) -> list[list[str]]:
    """One row per contender of run ``key``: times, overhead, counts, memory tokens."""
    run, counts = result[key], result["counts"]["per_turn"]
    rows = []
    for name, f in run["contenders"].items():
        ms, ratio = overhead(run, name)
        c = counts.get(name, {})
        rows.append(
            [
                name,
                f"{f['p50_ms']:.2f}",
                f"{f['p95_ms']:.2f}",
                f"{ms:+.2f}",
                f"{ratio:.2f}x",
                f"{c.get('round_trips', '')}",
                f"{c.get('checkpoints', '')}",
                f"{f['memory_tokens']}",
            ]
        )
    return rows


HEADER = [
    "contender",
    "p50 ms",
    "p95 ms",
    "over bare p50 ms",
    "/ bare p50",
    "round trips/turn",
    "checkpoints/turn",
    "memory tokens",
]


def run_title(result: dict[str, Any], key: str) -> str:
    """The heading of run ``key``, with its load averages."""
    run = result[key]
    extra = (
        f", +{result['plan']['delay_ms']:g} ms each way through a delay proxy (measured: "
        f"+{run['added_rtt_ms']} ms per SELECT 1 round trip)"
        if key == "delayed"
        else ""
    )
    return (
        f"{RUNS[key]}{extra}; {run['contenders']['kioku']['turns']} timed turns each; "
        f"load {run['load_before']} before, {run['load_after']} after"
    )


def text(result: dict[str, Any]) -> str:
    """Every table and target as aligned text."""
    lines: list[str] = []
    for key in RUNS:
        lines += [run_title(result, key), "  ".join(f"{h:>16}" for h in HEADER)]
        lines += ["  ".join(f"{c:>16}" for c in row) for row in contender_rows(result, key)]
        lines.append("")
    for name, f in result["flatness"]["contenders"].items():
        lines.append(f"kioku {name:<22} p50 {f['p50_ms']:8.2f} ms  p95 {f['p95_ms']:8.2f} ms")
    lines.append("")
    for t in targets(result):
        lines.append(
            f"{t.verdict:<7}{t.figure}: {t.kioku:g} {t.unit} ({t.against}: {t.limit:g}) "
            f"load {t.load}"
        )
    lines.append(f"done in {result['seconds']} s (load {result['load_after']})")
    return "\n".join(lines)


def markdown_table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A markdown table."""
    return [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" if k == 0 else "---:" for k in range(len(header))) + "|",
        *("| " + " | ".join(row) + " |" for row in rows),
    ]


def markdown(result: dict[str, Any]) -> list[str]:
    """The agent benchmark's tables and targets for RESULTS.md."""
    lines: list[str] = []
    for key in RUNS:
        lines += [f"Agent turns, {run_title(result, key)}:", ""]
        lines += markdown_table(HEADER, contender_rows(result, key)) + [""]
    flat = result["flatness"]
    lines += ["kioku's flatness through the same agent (alternating rounds):", ""]
    lines += markdown_table(
        ["kioku agent", "p50 ms", "p95 ms"],
        [[n, f"{f['p50_ms']:.2f}", f"{f['p95_ms']:.2f}"] for n, f in flat["contenders"].items()],
    )
    lines += ["", "Targets (issue #36, item 2):", ""]
    lines += markdown_table(
        ["figure", "kioku", "limit", "", "load average"],
        [
            [
                t.figure,
                f"{t.kioku:g} {t.unit}".strip(),
                f"{t.against}: {t.limit:g}",
                t.verdict,
                t.load,
            ]
            for t in targets(result)
        ],
    )
    return lines
