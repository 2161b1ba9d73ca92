"""The benchmark report: table rows, the RESULTS.md block, and replacing it in place."""

from __future__ import annotations

import json
from pathlib import Path

from bench.report_markdown import END, START, markdown, write_results
from bench.report_rows import rows
from bench.steps import QUICK

SAMPLE = json.loads((Path(__file__).parent / "data" / "bench-results-quick.json").read_text())


def test_every_figure_has_a_row_with_the_peer_beside_it() -> None:
    lines = rows(QUICK, SAMPLE)
    figures = [row.figure for row in lines]
    assert any("per-turn" in f for f in figures) and any("search p95" in f for f in figures)
    assert any("STM other-channel" in f for f in figures)
    assert all(row.ratio for row in lines if row.peer)
    assert all(row.verdict in ("met", "MISSED") for row in lines if row.target)
    assert any("round trips" in f for f in figures) and any("startup" in f for f in figures)


def test_the_generated_block_is_replaced_not_appended(tmp_path: Path) -> None:
    results = tmp_path / "RESULTS.md"
    results.write_text("# results\n\nhand-written intro\n\n## LoCoMo\n\nkept\n")
    block = markdown(QUICK, True, SAMPLE["machine"], SAMPLE)
    write_results(results, block)
    write_results(results, block)
    text = results.read_text()
    assert text.count(START) == 1 and text.count(END) == 1
    assert "hand-written intro" in text and "## LoCoMo" in text
    assert "python -m bench --quick" in text and SAMPLE["machine"]["commit"] in text
    assert "Load average" in text and "raw_sql_floor" in text


def test_the_soak_drift_is_judged_against_a_fresh_deployment() -> None:
    sample = json.loads(json.dumps(SAMPLE))
    sample["soak"]["drift"] |= {
        "ratio": 1.3,
        "against_fresh": {
            "turns_each": 100,
            "fresh_warmup_turns": 100,
            "soaked_p50_ms": 21.0,
            "fresh_p50_ms": 20.0,
            "ratio": 1.05,
        },
    }
    soak_rows = [row for row in rows(QUICK, sample) if row.figure.startswith("soak")]
    assert [(row.kioku, row.peer, row.verdict) for row in soak_rows] == [
        (1.3, None, ""),
        (21.0, 20.0, "met"),
    ]
    assert "fresh kioku" in soak_rows[1].peer_name
    assert "20.0 ms: 1.05" in markdown(QUICK, True, sample["machine"], sample)
