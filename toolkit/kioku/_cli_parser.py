"""The ``kioku`` command line's parser: every command and flag, each with its help.

Light on purpose (argparse alone): ``kioku --help`` and a mistyped flag answer without
importing anything heavy.
"""

from __future__ import annotations

import argparse
from typing import TypeAlias

from kioku._cli_memories import add_memories

_Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
"""The ``kioku`` parser's sub-command registry."""


def build_parser() -> argparse.ArgumentParser:
    """The ``kioku`` command line: every command and flag, each with its help."""
    parser = argparse.ArgumentParser(
        prog="kioku", description="Memory toolkit for LangGraph agents."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="a scripted conversation through the memory graph")
    chat = sub.add_parser("chat", help="chat with a real model (needs OPENAI_API_KEY)")
    chat.add_argument(
        "--reembed",
        action="store_true",
        help="first re-embed the stored memories with the configured embedder (after "
        "`kioku demo`, or after changing KIOKU_EMBEDDINGS)",
    )
    _add_mcp(sub)
    _add_server_settings(sub)
    _add_consolidate(sub)
    _add_operations(sub)
    add_memories(sub)
    return parser


def _add_mcp(sub: _Commands) -> None:
    """``kioku mcp``: transport, who the client acts for, read-only."""
    mcp = sub.add_parser("mcp", help="serve the memory tools over MCP (stdio by default)")
    mcp.add_argument(
        "--http",
        action="store_true",
        help="streamable HTTP instead of stdio; requests need the bearer token (KIOKU_MCP_TOKEN)",
    )
    mcp.add_argument("--host", default="127.0.0.1", help="address to listen on (default loopback)")
    mcp.add_argument("--port", type=int, default=8765, help="port to listen on (default 8765)")
    mcp.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="HOST[:PORT]",
        help="also accept this Host header, as clients send it (repeatable; HOST:* for any port)",
    )
    mcp.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="also accept this Origin header, e.g. https://app.example (repeatable)",
    )
    mcp.add_argument("--server-id", default="mcp", help="the server whose memories are used")
    mcp.add_argument(
        "--server-name", default="MCP", help="the server's name in rendered memories (default MCP)"
    )
    mcp.add_argument(
        "--channel-id",
        default="mcp",
        help="the conversation whose short-term memory the client updates (default mcp)",
    )
    mcp.add_argument("--user-id", default="mcp-user", help="the person the client acts for")
    mcp.add_argument(
        "--user-name", default="User", help="that person's name, as memories mention them"
    )
    mcp.add_argument("--persona", default="Assistant", help="persona name (lineage kept)")
    mcp.add_argument(
        "--read-only",
        action="store_true",
        help="refuse every write (long-term memories and short-term summaries)",
    )

def _add_server_settings(sub: _Commands) -> None:
    """``kioku server-settings``."""
    server_settings = sub.add_parser(
        "server-settings", help="show a server's memory settings (JSON), or change them"
    )
    server_settings.add_argument("server_id", help="the server's id")
    server_settings.add_argument(
        "--self-teaching",
        choices=("on", "off"),
        help="let the model (and writable MCP clients) write long-term memories there, or not",
    )

def _add_consolidate(sub: _Commands) -> None:
    """``kioku consolidate``: scope, apply, saved plans."""
    consolidate = sub.add_parser(
        "consolidate",
        help="ask the chat model to merge duplicate and retire contradicted memories (a dry "
        "run unless --apply)",
    )
    consolidate.add_argument(
        "--server", required=True, help="the server whose memories are consolidated"
    )
    consolidate.add_argument(
        "--persona",
        help="the persona whose lineage's memories are consolidated (default: the server's "
        "only one)",
    )
    consolidate.add_argument(
        "--user", help="consolidate this user's personal memories instead (their user id)"
    )
    consolidate.add_argument(
        "--apply",
        action="store_true",
        help="carry the plan out (through the update tool's flow); without it nothing changes",
    )
    kept = consolidate.add_mutually_exclusive_group()
    kept.add_argument(
        "--save-plan",
        metavar="FILE",
        help="a dry run that also writes the plan to FILE (a new file, readable by you only)",
    )
    kept.add_argument(
        "--plan",
        metavar="FILE",
        help="use the plan saved in FILE instead of asking the model (with --apply: carry "
        "out exactly it; actions on memories changed since are dropped)",
    )

def _add_operations(sub: _Commands) -> None:
    """``kioku setup``, ``reembed``, ``bench``, ``erase-user``, ``erase-server``, ``sweep``."""
    sub.add_parser("setup", help="create or upgrade the database schema")
    reembed = sub.add_parser(
        "reembed", help="embed queued memories, or all of them after switching KIOKU_EMBEDDINGS"
    )
    reembed.add_argument(
        "--all",
        action="store_true",
        dest="everything",
        help="embed every memory again, even those recorded as the configured model's",
    )
    bench = sub.add_parser(
        "bench", help="run every benchmark beside PostgresStore (from a clone of the repository)"
    )
    bench.add_argument("--quick", action="store_true", help="small sizes, under a minute")
    erase_user = sub.add_parser(
        "erase-user", help="forget everything about one person (memories, history text, chats)"
    )
    erase_user.add_argument("user_id", help="the person's external user id")
    erase_server = sub.add_parser(
        "erase-server", help="forget everything about one server (memories, history, chats)"
    )
    erase_server.add_argument("server_id", help="the server's id")
    sweep = sub.add_parser(
        "sweep", help="delete idle short-term memory, apply history retention"
    )
    # Scripts of releases that pruned checkpoint versions may still pass it.
    sweep.add_argument("--since-hours", type=float, help=argparse.SUPPRESS)
