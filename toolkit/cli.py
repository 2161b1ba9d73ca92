"""The ``kioku`` command."""

from __future__ import annotations

import argparse
import logging
import sys

from rich.console import Console

from toolkit.config import load_settings
from toolkit.errors import ConfigurationError
from toolkit.store import KiokuStore


def _open_store(console: Console) -> KiokuStore:
    settings = load_settings()
    where = (
        settings.database_url
        and "KIOKU_DATABASE_URL"
        or f"embedded PostgreSQL in {settings.data_dir}"
    )
    with console.status(f"Starting the database ({where})…"):
        store = KiokuStore.open(settings)
        store.setup()
    return store


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``kioku`` console script."""
    parser = argparse.ArgumentParser(
        prog="kioku", description="Memory toolkit for LangGraph agents."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="walk through the memory tools on the (embedded) database")
    sub.add_parser("setup", help="create or upgrade the database schema")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    console = Console()
    try:
        store = _open_store(console)
    except ConfigurationError as exc:
        console.print(f"[red]kioku: {exc}[/]")
        return 2
    with store:
        if args.command == "setup":
            console.print("Schema is up to date.")
        else:
            from toolkit.demo import run_demo

            console.rule("kioku demo: long-term memory tools")
            run_demo(store, console)
    return 0


if __name__ == "__main__":
    sys.exit(main())
