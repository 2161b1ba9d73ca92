"""The ``kioku`` command.

Building the parser imports nothing heavy: ``kioku --help`` answers at once. The setup
checks that need no model and no database (settings, the database URL, flags) run before
LangChain or LangGraph is imported, so such a configuration error answers at once too; a
command imports the chat model and the store (LangGraph, SQLAlchemy, psycopg …) only when
it runs.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from kioku._cli_parser import build_parser
from kioku._errors import ConfigurationError, EmbedderMismatchError

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from rich.console import Console

    from kioku._config import KiokuSettings
    from kioku._db.schema import SchemaChange
    from kioku._mcp_server import KiokuMcp
    from kioku._store import KiokuStore

_SETUP_REPORTS: dict[SchemaChange, str] = {
    "created": "Created the schema.",
    "upgraded": "Upgraded the schema to the newest version.",
    "unchanged": "Schema is up to date.",
}


def _open_store(
    console: Console, settings: KiokuSettings, *, quiet: bool = False
) -> tuple[KiokuStore, SchemaChange]:
    """Open the store and bring its schema up to date (what that did, too)."""
    from kioku._store import KiokuStore

    if quiet:
        store = KiokuStore.open(settings)
        return store, store.setup()
    where = (
        settings.database_url
        and "KIOKU_DATABASE_URL"
        or f"embedded PostgreSQL in {settings.data_dir}"
    )
    with console.status(f"Starting the database ({where})…"):
        store = KiokuStore.open(settings)
        change = store.setup()
    return store, change


def _failed(console: Console, exc: ConfigurationError) -> int:
    """Report a setup problem on one line (no traceback); the exit status is 2."""
    from rich.markup import escape

    console.print(f"[red]kioku: {escape(str(exc))}[/]", soft_wrap=True)
    return 2


def _with_chat_remedy(exc: EmbedderMismatchError) -> EmbedderMismatchError:
    """``exc`` naming the flag that re-embeds and starts the chat in one go."""
    return EmbedderMismatchError(
        exc.stored,
        exc.configured,
        remedy="`kioku chat --reembed` to re-embed them with it and start the chat",
    )


def _reembed(console: Console, settings: KiokuSettings, *, everything: bool = False) -> None:
    from rich.progress import Progress

    from kioku._reembed import reembed
    from kioku._store import KiokuStore

    store = KiokuStore.open(settings, check_embedder=False)  # it switches them
    with store, Progress(console=console) as bar:
        task = bar.add_task(f"embedding with {store.embedder.model}", total=None)
        done = reembed(
            store,
            progress=lambda done, total: bar.update(task, completed=done, total=total),
            everything=everything,
        )
    model = store.embedder.model
    console.print(f"Embedded {done.embedded} memories with {model}.")
    if done.stale:
        console.print(
            f"{done.stale} of them had a vector not recorded as {model}'s (saved by a "
            "process of an earlier release); embedded again."
        )


def clone_on_path(folder: Path) -> bool:
    """Put ``folder`` on ``sys.path`` when it is a clone holding the benchmarks.

    A console script's path starts at its own folder, not at the working directory, so
    ``kioku bench`` run in a clone would not find ``bench/`` without this.
    """
    if not (folder / "bench" / "__main__.py").is_file():
        return False
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    return True


def _bench(console: Console, *, quick: bool) -> int:
    clone_on_path(Path.cwd())
    try:
        from bench.__main__ import main as run_benchmarks
    except ImportError:
        console.print(
            "[red]kioku bench runs from a clone of the repository[/] (the benchmarks are not "
            "installed with the package): cd into it and run `.venv/bin/kioku bench`."
        )
        return 2
    run_benchmarks(["--quick"] if quick else [])
    return 0


def _sweep(store: KiokuStore) -> str:
    from kioku._sweeper import sweep

    report = sweep(store)
    if not report.ran:
        return "Another process is sweeping right now; nothing done."
    return (
        f"Deleted {report.deleted_threads} idle short-term memory entries and "
        f"{report.history_rows_deleted} memory history rows past retention."
    )


def _erase(store: KiokuStore, console: Console, kind: str, subject: str) -> None:
    receipt = store.erase_user(subject) if kind == "user" else store.erase_server(subject)
    console.print_json(json.dumps(receipt.to_dict()))


def _server_settings(store: KiokuStore, server_id: str, self_teaching: str | None) -> str:
    """The server's settings as JSON, after turning self-teaching on or off if asked."""
    with store.accounts() as accounts:
        if self_teaching is not None:
            accounts.upsert_server(server_id, self_teaching_enabled=self_teaching == "on")
        settings = accounts.server_settings(server_id)
    return json.dumps({"server_id": server_id, **settings.to_dict()})


def _serve_mcp(store: KiokuStore, args: argparse.Namespace) -> None:
    import asyncio

    from kioku._mcp_server import KiokuMcp, McpScope, serve_stdio

    scope = McpScope(
        server_id=args.server_id,
        server_name=args.server_name,
        channel_id=args.channel_id,
        user_id=args.user_id,
        user_name=args.user_name,
        persona_name=args.persona,
        writable=not args.read_only,
    )
    app = KiokuMcp(store, scope)
    if args.http:
        _serve_mcp_http(store, app, args)
    else:
        asyncio.run(serve_stdio(app))


def _serve_mcp_http(store: KiokuStore, app: KiokuMcp, args: argparse.Namespace) -> None:
    from kioku._mcp_http import HttpOptions, http_token, serve_http

    token, generated = http_token(store.settings)
    options = HttpOptions(
        token=token,
        host=args.host,
        port=args.port,
        allowed_hosts=tuple(args.allow_host),
        allowed_origins=tuple(args.allow_origin),
    )
    lines = [f"kioku mcp: serving {options.url}"]
    if generated:
        lines.append(
            "kioku mcp: bearer token for this run (set KIOKU_MCP_TOKEN to choose one): " + token
        )
    else:
        lines.append("kioku mcp: bearer token from KIOKU_MCP_TOKEN")
    if not options.loopback_only:
        lines.append("kioku mcp: reachable beyond this machine over plain HTTP; put TLS in front")
    # Plain print: rich would wrap the token; stdout stays free for the protocol.
    print("\n".join(lines), file=sys.stderr, flush=True)
    serve_http(app, options)


def _check_setup(args: argparse.Namespace) -> KiokuSettings:
    """The settings, after the checks that need neither LangChain nor a database.

    So a mistyped setting, database URL or flag answers at once, before any model is set up.

    Raises:
        ConfigurationError: what is wrong, on one line.
    """
    from kioku._config import load_settings

    if args.command == "consolidate" and "" in (args.save_plan, args.plan):
        raise ConfigurationError("--save-plan and --plan need a file name")
    if args.command == "consolidate" and args.save_plan is not None and args.apply:
        raise ConfigurationError("--save-plan is a dry run: drop --apply")
    settings = load_settings()
    if settings.database_url is not None:
        from kioku._db.engine import normalise_url

        normalise_url(settings.database_url)
    return settings


def _before_database(args: argparse.Namespace) -> BaseChatModel | None:
    """What a command needs before the database starts: its chat model, or its MCP scope checked.

    LangChain loads here, for the commands that need it.
    """
    if args.command == "chat":
        from kioku._models import openai_model_from_env

        return openai_model_from_env()
    if args.command == "consolidate" and args.plan is None:
        from kioku._consolidation.command import consolidation_model

        return consolidation_model()
    if args.command == "mcp":
        from kioku._context import check_user_space

        check_user_space(args.server_id, args.user_id)  # a scope no call could run in
    return None


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``kioku`` console script (exit 2, one line, for setup problems)."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    from rich.console import Console

    console = Console(stderr=args.command == "mcp")  # stdout carries the MCP protocol
    if args.command == "bench":
        return _bench(console, quick=args.quick)
    try:
        settings = _check_setup(args)
        if args.command == "memories" and args.memories_command != "search":
            from kioku._cli_memories import run_view

            return run_view(settings, args, console)
        model = _before_database(args)
        if args.command == "chat" and model is None:
            console.print(
                "[red]kioku chat needs OPENAI_API_KEY (and optionally OPENAI_BASE_URL for an "
                "OpenAI-compatible server).[/] Run `kioku demo` for the scripted walkthrough.",
                soft_wrap=True,
            )
            return 2
        if args.command == "reembed":
            _reembed(console, settings, everything=args.everything)
        elif args.command == "chat" and args.reembed:
            _reembed(console, settings)
        if args.command != "reembed":
            quiet = args.command in ("mcp", "memories", "export")  # stdout: protocol or JSON
            store, change = _open_store(console, settings, quiet=quiet)
            with store:
                status = _run_command(store, change, args, console, model)
                if status:
                    return status
    except EmbedderMismatchError as exc:
        return _failed(console, _with_chat_remedy(exc) if args.command == "chat" else exc)
    except ConfigurationError as exc:
        return _failed(console, exc)
    except Exception as exc:  # an unusable model endpoint is a setup problem too
        from kioku._models import endpoint_failure

        problem = endpoint_failure(exc)
        if problem is None:
            raise
        return _failed(console, problem)
    return 0


def _run_command(
    store: KiokuStore,
    change: SchemaChange,
    args: argparse.Namespace,
    console: Console,
    model: BaseChatModel | None,
) -> int:
    if args.command == "memories":
        from kioku._cli_memories import run_search

        return run_search(store, args, console)
    if args.command == "export":
        from kioku._cli_memories import run_export

        return run_export(store, args)
    if args.command == "setup":
        console.print(_SETUP_REPORTS[change])
    elif args.command == "sweep":
        console.print(_sweep(store))
    elif args.command == "erase-user":
        _erase(store, console, "user", args.user_id)
    elif args.command == "erase-server":
        _erase(store, console, "server", args.server_id)
    elif args.command == "server-settings":
        console.print_json(_server_settings(store, args.server_id, args.self_teaching))
    elif args.command == "mcp":
        _serve_mcp(store, args)
    elif args.command == "consolidate":
        from kioku._consolidation.command import run_consolidate

        run_consolidate(
            store,
            model,
            console,
            server_id=args.server,
            persona_name=args.persona,
            user_id=args.user,
            apply=args.apply,
            save_plan=args.save_plan,
            saved_plan=args.plan,
        )
    elif args.command == "chat":
        from kioku._chat import run_chat

        assert model is not None
        run_chat(store, model, console)
    else:
        from kioku._demo import run_demo

        console.rule("kioku demo: memory for LangGraph agents")
        run_demo(store, console)
    return 0


if __name__ == "__main__":
    sys.exit(main())
