"""Startup time: ``import kioku``, ``kioku --help``, a configuration error, an operator's look.

Run from a clone::

    .venv/bin/python -m bench.startup [--repeats 5]

Each figure is the median wall time of ``repeats`` fresh interpreters (``_min_s``: the
fastest; ``_cpu_s``: the median user+sys CPU time, steadier than wall time on a loaded
machine). The configuration error is ``kioku setup`` with a malformed
``KIOKU_DATABASE_URL`` (:data:`BAD_URL`), which exits 2 with one line. ``memories_list``
and ``memories_show`` are ``kioku memories list`` and ``show`` on a running server (a
database of the bench's own, filled by ``kioku demo`` first, untimed). The target is
under a second for each, on an idle machine.
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
BAD_URL = "not a database url"
"""The ``KIOKU_DATABASE_URL`` of the configuration error timed."""
MEMORIES = "memories_"
"""Names of the figures timing ``kioku memories …`` on the bench's database."""
CONFIG_ERROR = "config_error"
"""The figure's name: ``kioku setup`` refusing :data:`BAD_URL` (exit status 2)."""


def _time(name: str, command: list[str], url: str = "") -> tuple[float, float]:
    """Wall and user+sys CPU seconds of one run of ``command``, without kioku settings.

    ``url``: the ``KIOKU_DATABASE_URL`` of the operator's commands. It must succeed; the
    configuration error must exit 2.
    """
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("KIOKU_", "OPENAI_"))}
    if name.startswith(MEMORIES):
        environment["KIOKU_DATABASE_URL"] = url
    expected = 0
    if name == CONFIG_ERROR:
        environment["KIOKU_DATABASE_URL"] = BAD_URL
        expected = 2
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    status = subprocess.run(
        command,
        cwd=ROOT,
        env=environment,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    ).returncode
    wall = time.perf_counter() - start
    if status != expected:
        raise RuntimeError(f"{' '.join(command)} exited {status}, expected {expected}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _measure(name: str, command: list[str], repeats: int, url: str) -> dict[str, float]:
    runs = [_time(name, command, url) for _ in range(repeats)]
    walls = [wall for wall, _ in runs]
    return {
        f"{name}_s": round(statistics.median(walls), 3),
        f"{name}_min_s": round(min(walls), 3),
        f"{name}_cpu_s": round(statistics.median(cpu for _, cpu in runs), 3),
    }


def commands() -> dict[str, list[str]]:
    """What is timed: the import, the help, a configuration error, the script's help.

    The ``kioku`` script's help only when it is installed.
    """
    timed = {
        "import": [sys.executable, "-c", "import kioku"],
        "help": [sys.executable, "-m", "kioku.cli", "--help"],
        CONFIG_ERROR: [sys.executable, "-m", "kioku.cli", "setup"],
        f"{MEMORIES}list": [sys.executable, "-m", "kioku.cli", "memories", "list"],
        f"{MEMORIES}show": [sys.executable, "-m", "kioku.cli", "memories", "show", "1"],
    }
    script = Path(sys.executable).with_name("kioku")
    if script.exists():
        timed["script_help"] = [str(script), "--help"]
    return timed


def measure_startup(repeats: int = 5) -> dict[str, float]:
    """Startup figures in seconds: ``import_s`` and ``help_s`` (medians) and the others.

    Keys: ``import_s``, ``help_s``, ``config_error_s`` and ``script_help_s`` (the installed
    ``kioku`` script, when there is one), each with ``_min_s`` and ``_cpu_s`` companions.
    """
    from bench.common import bench_database

    results: dict[str, float] = {}
    with bench_database("kioku_bench_startup") as url:
        _remember_a_few(url)
        for name, command in commands().items():
            _time(name, command, url)  # warm the OS's file cache and the bytecode cache
            results.update(_measure(name, command, repeats, url))
    return results


def _remember_a_few(url: str) -> None:
    """Fill ``url`` as a user would first: ``kioku demo`` (hashing embeddings, untimed)."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("KIOKU_", "OPENAI_"))}
    environment |= {"KIOKU_DATABASE_URL": url, "KIOKU_EMBEDDINGS": "hashing"}
    subprocess.run(
        [sys.executable, "-m", "kioku.cli", "demo"],
        cwd=ROOT,
        env=environment,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        check=True,
    )


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
            f"  {name:<13} median {results[f'{name}_s']:.3f} s, "
            f"min {results[f'{name}_min_s']:.3f} s, cpu {results[f'{name}_cpu_s']:.3f} s"
        )
    return results


if __name__ == "__main__":
    main()
