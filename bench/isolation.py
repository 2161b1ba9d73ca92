"""The multi-tenant isolation property at benchmark scale (10,000 random turns).

Runs ``tests/test_isolation_property.py`` with ``KIOKU_ISOLATION_EXAMPLES`` raised; the
suite itself runs 200 cases in CI.

Run: .venv/bin/python -m bench.isolation [--cases 10000]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def run_isolation(cases: int) -> dict[str, Any]:
    """Run the property with ``cases`` examples; whether it held, and how long it took."""
    env = {**os.environ, "KIOKU_ISOLATION_EXAMPLES": str(cases)}
    start = time.perf_counter()
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/test_isolation_property.py",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return {
        "cases": cases,
        "held": completed.returncode == 0,
        "seconds": round(time.perf_counter() - start, 1),
        "output_tail": completed.stdout.strip().splitlines()[-1:] if completed.stdout else [],
    }


def main() -> None:
    """Run and print the outcome."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", type=int, default=10_000)
    print(run_isolation(parser.parse_args().cases))


if __name__ == "__main__":
    main()
