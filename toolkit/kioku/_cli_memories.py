"""``kioku memories list|show|history|search``: what kioku remembers, for operators.

An operator's view of the database (every memory the filters select, whoever it is
about), printed as lines or, with ``--json``, as JSON. Never offered to the model or MCP.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from kioku._errors import ConfigurationError

if TYPE_CHECKING:
    from rich.console import Console
    from sqlalchemy.orm import Session, sessionmaker

    from kioku._config import KiokuSettings
    from kioku._inspection import MemoryDetail, StoredMemory
    from kioku._store import KiokuStore


def add_memories(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``kioku memories`` (and its sub-commands) and ``kioku export``."""
    memories = sub.add_parser("memories", help="list, show, search stored memories (operators)")
    actions = memories.add_subparsers(
        dest="memories_command", required=True, help="list, show, history or search"
    )
    listing = actions.add_parser("list", help="memories of a server or a person, newest first")
    _add_filters(listing)
    listing.add_argument("--type", dest="memory_type", help="only this memory type")
    listing.add_argument("--archived", action="store_true", help="archived memories too")
    listing.add_argument("--limit", type=int, default=100, help="at most this many (100)")
    for name, text in (("show", "one memory and its history"), ("history", "its history only")):
        shown = actions.add_parser(name, help=text)
        shown.add_argument("memory_id", type=int, help="the memory's id (ID:N)")
        shown.add_argument("--json", action="store_true", help="print JSON")
    search = actions.add_parser("search", help="a scope's memories best matching a query")
    search.add_argument("query", help="what to look for")
    _add_filters(search)
    search.add_argument("--limit", type=int, default=10, help="at most this many (10)")
    export = sub.add_parser("export", help="everything kioku holds about a person, as JSON")
    export.add_argument("--user", dest="user_id", required=True, help="the person's user id")


def run_export(store: KiokuStore, args: argparse.Namespace) -> int:
    """Print ``kioku export --user ID``'s JSON."""
    print(json.dumps(store.export_user(args.user_id), ensure_ascii=False, indent=2))
    return 0


def _add_filters(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--server-id", help="a server's server-wide memories")
    parser.add_argument("--user-id", help="a person's personal memories")
    parser.add_argument(
        "--lineage",
        type=int,
        help="one persona lineage (default: all; search: the default persona's)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON")


def run_view(settings: KiokuSettings, args: argparse.Namespace, console: Console) -> int:
    """Run ``kioku memories list|show|history`` on sessions alone; returns the exit status.

    No store is built, so neither LangChain nor an embedder is imported: the command
    answers about as fast as the database does.

    Raises:
        ConfigurationError: the database cannot be reached, or has no (or an older) kioku
            schema.
    """
    from sqlalchemy.exc import OperationalError, ProgrammingError

    from kioku._db.engine import unreachable
    from kioku._db.opening import open_database, read_sessions

    database = open_database(settings)
    try:
        return _view(read_sessions(database.engine), args, console)
    except ProgrammingError as exc:  # a missing table or column
        raise ConfigurationError(
            "this database has no kioku schema, or an older one: run `kioku setup` first"
        ) from exc
    except OperationalError as exc:
        raise unreachable(database.engine, exc) from exc
    finally:
        database.close()


def _view(reads: sessionmaker[Session], args: argparse.Namespace, console: Console) -> int:
    from kioku._inspection import MemoryFilter, list_memories, show_memory

    if args.memories_command in ("show", "history"):
        return _show(show_memory(reads, args.memory_id), args, console)
    where = MemoryFilter(
        server_id=args.server_id,
        user_id=args.user_id,
        lineage_id=args.lineage,
        memory_type=args.memory_type,
        status=None if args.archived else "active",
    )
    _print(console, list_memories(reads, where, limit=args.limit), args.json)
    return 0


def _show(detail: MemoryDetail, args: argparse.Namespace, console: Console) -> int:
    command = args.memories_command
    if detail.memory is None and not detail.history:
        console.print(f"kioku: no memory {args.memory_id}", markup=False)
        return 1
    if args.json:
        payload: Any = detail.to_dict() if command == "show" else detail.to_dict()["history"]
        print(json.dumps(payload, ensure_ascii=False, indent=2))
        return 0
    if command == "show" and detail.memory is not None:
        console.print(_line(detail.memory), markup=False, highlight=False, soft_wrap=True)
    for row in detail.history:
        text = row.new_content if row.new_content is not None else row.old_content
        when = row.created_at.isoformat(timespec="seconds")
        console.print(
            f"  {when} {row.action} by {row.actor_user_id}: {text}", markup=False, soft_wrap=True
        )
    return 0


def run_search(store: KiokuStore, args: argparse.Namespace, console: Console) -> int:
    """Run ``kioku memories search``; returns the exit status."""
    from kioku._context import DEFAULT_PERSONA, server_key
    from kioku._domain.scopes import PersonalScope, ServerScope

    lineage = args.lineage if args.lineage is not None else DEFAULT_PERSONA.lineage_id
    if (args.server_id is None) == (args.user_id is None):
        console.print("kioku: search needs one of --server-id or --user-id", markup=False)
        return 2
    scope = (
        ServerScope(server_key(args.server_id), lineage)
        if args.server_id is not None
        else PersonalScope(args.user_id, lineage)
    )
    hits = store.search_memories(scope, args.query, limit=args.limit)
    if args.json:
        rows = [{**memory.to_dict(), "score": score} for memory, score in hits]
        print(json.dumps(rows, ensure_ascii=False, indent=2))
        return 0
    for memory, score in hits:
        console.print(f"{score:.4f} {_line(memory)}", markup=False, highlight=False, soft_wrap=True)
    return 0


def _print(console: Console, memories: list[StoredMemory], as_json: bool) -> None:
    if as_json:
        print(json.dumps([m.to_dict() for m in memories], ensure_ascii=False, indent=2))
        return
    for memory in memories:
        console.print(_line(memory), markup=False, highlight=False, soft_wrap=True)


def _line(memory: StoredMemory) -> str:
    """``ID:N [scope owner lineage type status created] content``."""
    owner = memory.user_id if memory.scope == "personal" else memory.server_key
    created = memory.created_at.isoformat(timespec="seconds")
    return (
        f"ID:{memory.id} [{memory.scope} {owner} lineage {memory.persona_lineage_id} "
        f"{memory.memory_type} {memory.status} {created}] {memory.content}"
    )
