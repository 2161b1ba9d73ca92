"""``kioku chat``: talk to a real model through the per-turn memory graph."""

from __future__ import annotations

import uuid
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from rich.console import Console
from rich.panel import Panel

from kioku._context import Participant, TurnContext
from kioku._store import KiokuStore

SERVER = "cli"
HELP = "Commands: /channel NAME · /user NAME · /context · /quit"


def run_chat(store: KiokuStore, model: BaseChatModel, console: Console) -> None:
    """A terminal conversation; memories persist in kioku's database between sessions."""
    from kioku.graphs._turn import build_graph

    with store.accounts() as accounts:
        accounts.upsert_server(SERVER, "Terminal", self_teaching_enabled=True)
        persona = accounts.create_persona(SERVER, "Kioku", lineage_id=_lineage(store))
    graph = build_graph(
        model,
        store,
        checkpointer=store.checkpointer(),
        system_prompt="You are Kioku, a friendly assistant with long- and short-term memory.",
    )
    channel, user = "general", Participant("cli-you", "You")
    last: dict[str, Any] = {}
    console.print(f"[dim]{HELP}[/]")
    while True:
        try:
            line = console.input(f"[bold cyan]{user.display_name}[/] in #{channel}> ").strip()
        except (EOFError, KeyboardInterrupt):
            break
        if not line:
            continue
        if line == "/quit":
            break
        if line.startswith("/channel "):
            channel = line.split(maxsplit=1)[1]
            continue
        if line.startswith("/user "):
            name = line.split(maxsplit=1)[1]
            user = Participant(f"cli-{name.lower()}", name)
            continue
        if line == "/context":
            text = "\n\n".join(str(m.content) for m in last.get("kioku_memory_context", []))
            console.print(Panel(text or "(no turn yet)", title="what the model saw"))
            console.print(last.get("kioku_context_tokens", {}))
            continue
        context = TurnContext(
            server_id=SERVER,
            server_name="Terminal",
            channel_id=channel,
            channel_name=channel,
            user=user,
            persona=persona,
            bot_user_id="cli-bot",
            participants=(user,),
            turn_id=uuid.uuid4().hex,
        )
        config: RunnableConfig = {"configurable": {"thread_id": f"cli-{channel}"}}
        for mode, part in graph.stream(
            {"messages": [HumanMessage(line, name=user.display_name)]},
            config,
            context=context,
            stream_mode=["custom", "values"],
        ):
            chunk: Any = part
            if mode == "custom":
                notice = chunk["notice"]
                console.print(f"[dim]memory {notice['kind']}: {notice['content']}[/]")
            else:
                last = chunk
        reply = last["messages"][-1] if last.get("messages") else None
        if isinstance(reply, AIMessage):
            console.print(f"[bold green]Kioku[/]: {reply.text}")


def _lineage(store: KiokuStore) -> int | None:
    """Reuse the terminal persona's lineage across sessions, so its memories persist."""
    from sqlalchemy import select

    from kioku._db.models import PersonaRow

    with store.sessions() as session:
        return session.scalar(
            select(PersonaRow.lineage_id).where(PersonaRow.server_id == SERVER).limit(1)
        )
