"""``kioku demo``: a scripted walk through the long-term memory tools on a real database."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.panel import Panel
from sqlalchemy import delete

from toolkit.context import Participant, PrivacyLevel, TurnContext
from toolkit.db.models import Server, User
from toolkit.memory.notices import MemoryNotice
from toolkit.memory.rendering import render_personal_memories, render_server_memories
from toolkit.memory.repository import PersonalScope, ServerScope
from toolkit.store import KiokuStore
from toolkit.tools.invoke import run_tool_call
from toolkit.tools.ltm import long_term_memory_tools

SERVER = "demo-server"
ALICE = Participant("demo-alice", "Alice", aliases=("ali",))
BOB = Participant("demo-bob", "Bob", privacy=PrivacyLevel.PARTIAL)


def _reset(store: KiokuStore) -> None:
    """Remove what an earlier demo run left, so every run starts the same way."""
    with store.transaction() as session:
        session.execute(delete(Server).where(Server.id == SERVER))
        session.execute(delete(User).where(User.id.in_([ALICE.user_id, BOB.user_id])))


def run_demo(store: KiokuStore, console: Console | None = None) -> list[dict[str, Any]]:
    """Create a server, a persona and two users, then drive the tools; returns the results."""
    console = console or Console()
    _reset(store)
    with store.accounts() as accounts:
        accounts.upsert_server(SERVER, "Tea House", self_teaching_enabled=True)
        persona = accounts.create_persona(SERVER, "Kioku")
        accounts.upsert_user(ALICE.user_id, ALICE.display_name, aliases=ALICE.aliases)
        accounts.upsert_user(BOB.user_id, BOB.display_name, privacy=BOB.privacy)
        accounts.add_member(SERVER, ALICE.user_id)
        accounts.add_member(SERVER, BOB.user_id)
    console.print(
        f"Server [bold]Tea House[/], persona [bold]{persona.name}[/] "
        f"(lineage {persona.lineage_id}), users Alice (MINIMAL) and Bob (PARTIAL privacy)\n"
    )

    notices: list[MemoryNotice] = []
    context = TurnContext(
        server_id=SERVER,
        server_name="Tea House",
        channel_id="demo-general",
        channel_name="general",
        user=ALICE,
        persona=persona,
        bot_user_id="demo-bot",
        participants=(ALICE, BOB),
        notifier=notices.append,
    )
    tools = long_term_memory_tools(store)
    results: list[dict[str, Any]] = []

    def call(title: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        outcome = run_tool_call(tools, name, arguments, context)
        result: dict[str, Any] = json.loads(str(outcome.message.content))
        results.append(result)
        ok = "_successfully" in result["status"]
        console.print(f"[bold]{title}[/]")
        console.print(f"  model → {name}({json.dumps(arguments, ensure_ascii=False)})")
        console.print(f"  tool  → [{'green' if ok else 'yellow'}]{result['status']}[/]")
        if "reason" in result:
            console.print(f"          {result['reason']}")
        while notices:
            notice = notices.pop(0)
            console.print(
                Panel(
                    f"{notice.content}\n[dim]{notice.footer}[/]",
                    title=f"notice: memory {notice.kind} ({notice.scope})",
                    expand=False,
                )
            )
        console.print()
        return result

    first = call(
        "1. A server-wide fact",
        "create_long_term_memory",
        {"memory_content": "{bot} serves tea every Friday evening", "memory_scope": "server_wide"},
    )
    call(
        "2. A personal fact about Alice (named by her alias)",
        "create_long_term_memory",
        {
            "memory_content": "{user} prefers jasmine tea",
            "memory_scope": "target_user",
            "target_user": "@ali",
        },
    )
    call(
        "3. A personal fact about Bob, whose privacy level is PARTIAL",
        "create_long_term_memory",
        {
            "memory_content": "{user} dislikes tea",
            "memory_scope": "target_user",
            "target_user": "Bob",
        },
    )
    memory_id = first.get("memory_id", 0)
    call(
        "4. Correcting the server-wide fact by its ID",
        "update_long_term_memory",
        {"memory_id": f"ID:{memory_id}", "memory_content": "{bot} serves tea every Saturday"},
    )
    call(
        "5. A placeholder the model made up is unwrapped",
        "create_long_term_memory",
        {"memory_content": "The {teahouse} opens at {bot}'s call", "memory_scope": "server_wide"},
    )
    _show_blocks(store, console, context)
    call(
        "6. Forgetting the corrected fact (empty content deletes)",
        "update_long_term_memory",
        {"memory_id": memory_id, "memory_content": ""},
    )
    _show_blocks(store, console, context)
    return results


def _show_blocks(store: KiokuStore, console: Console, context: TurnContext) -> None:
    lineage = context.persona.lineage_id
    server_block = render_server_memories(
        store.memories(ServerScope(SERVER, lineage)),
        bot_name=context.persona.name,
        server_name=context.server_name,
        is_dm=False,
    )
    personal = store.memories(PersonalScope(ALICE.user_id, lineage))
    lines = [server_block, "", "## Participants", "Alice"]
    if personal:
        lines.append(
            render_personal_memories(personal, owner_name="Alice", bot_name=context.persona.name)
        )
    lines.append("Bob (privacy: no personal memories)")
    console.print(Panel("\n".join(lines), title="memory blocks the model would see", expand=False))
    console.print()
