"""Startup time: ``import kioku`` and ``kioku --help``, each in fresh processes.

Run from a clone::

    .venv/bin/python -m bench.startup [--repeats 5]

Each figure is the median wall time of ``repeats`` fresh interpreters (``_min_s``: the
fastest; ``_cpu_s``: the median user+sys CPU time, steadier than wall time on a loaded
machine). The target is under a second for both.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _time(command: list[str]) -> tuple[float, float]:
    """Wall and user+sys CPU seconds of one run of ``command`` (which must succeed)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        command,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _measure(name: str, command: list[str], repeats: int) -> dict[str, float]:
    runs = [_time(command) for _ in range(repeats)]
    walls = [wall for wall, _ in runs]
    return {
        f"{name}_s": round(statistics.median(walls), 3),
        f"{name}_min_s": round(min(walls), 3),
        f"{name}_cpu_s": round(statistics.median(cpu for _, cpu in runs), 3),
    }


def commands() -> dict[str, list[str]]:
    """What is timed: the import, the CLI's help, and the ``kioku`` script when installed."""
    timed = {
        "import": [sys.executable, "-c", "import kioku"],
        "help": [sys.executable, "-m", "kioku.cli", "--help"],
    }
    script = Path(sys.executable).with_name("kioku")
    if script.exists():
        timed["script_help"] = [str(script), "--help"]
    return timed


def measure_startup(repeats: int = 5) -> dict[str, float]:
    """Startup figures in seconds: ``import_s`` and ``help_s`` (medians) and the others.

    Keys: ``import_s``, ``help_s`` and ``script_help_s`` (the installed ``kioku`` script,
    when there is one), each with ``_min_s`` and ``_cpu_s`` companions.
    """
    results: dict[str, float] = {}
    for name, command in commands().items():
        _time(command)  # warm the OS's file cache and the bytecode cache
        results.update(_measure(name, command, repeats))
    return results


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Print the startup figures; return them."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="fresh processes per figure")
    args = parser.parse_args(argv)
    results = measure_startup(args.repeats)
    load = os.getloadavg()[0]
    print(f"startup over {args.repeats} runs each (load average {load:.2f}):")
    for name in commands():
        print(
            f"  {name:<12} median {results[f'{name}_s']:.3f} s, "
            f"min {results[f'{name}_min_s']:.3f} s, cpu {results[f'{name}_cpu_s']:.3f} s"
        )
    return results


if __name__ == "__main__":
    main()
