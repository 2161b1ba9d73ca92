"""``kioku chat``: talk to a real model through the per-turn memory graph."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from rich.console import Console
from rich.panel import Panel

from kioku._context import Participant, Persona, TurnContext
from kioku._store import KiokuStore

if TYPE_CHECKING:
    from langgraph.graph.state import CompiledStateGraph

    from kioku.graphs._state import TurnGraphState

    TurnGraph = CompiledStateGraph[TurnGraphState, Any, TurnGraphState, TurnGraphState]

SERVER = "cli"
HELP = "Commands: /channel NAME · /user NAME · /context · /quit"


def run_chat(store: KiokuStore, model: BaseChatModel, console: Console) -> None:
    """A terminal conversation; memories persist in kioku's database between sessions."""
    chat = _Chat.open(store, model, console)
    console.print(f"[dim]{HELP}[/]")
    while True:
        try:
            line = console.input(f"[bold cyan]{chat.user.display_name}[/] in #{chat.channel}> ")
        except (EOFError, KeyboardInterrupt):
            break
        line = line.strip()
        if line == "/quit":
            break
        if line and not chat.command(line):
            chat.take_turn(line)


@dataclass
class _Chat:
    """A terminal conversation: where it is, who speaks, and what the last turn held."""

    console: Console
    persona: Persona
    graph: TurnGraph
    channel: str = "general"
    user: Participant = field(default_factory=lambda: Participant("cli-you", "You"))
    last: dict[str, Any] = field(default_factory=dict)
    """The graph's state after the last turn."""

    @classmethod
    def open(cls, store: KiokuStore, model: BaseChatModel, console: Console) -> _Chat:
        """A conversation with ``model`` as the terminal's persona (its lineage kept)."""
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
        return cls(console, persona, graph)

    def command(self, line: str) -> bool:
        """Carry out ``line`` if it is a command (``/quit`` aside); whether it was one."""
        if line.startswith("/channel "):
            self.channel = line.split(maxsplit=1)[1]
        elif line.startswith("/user "):
            name = line.split(maxsplit=1)[1]
            self.user = Participant(f"cli-{name.lower()}", name)
        elif line == "/context":
            text = "\n\n".join(str(m.content) for m in self.last.get("kioku_memory_context", []))
            self.console.print(Panel(text or "(no turn yet)", title="what the model saw"))
            self.console.print(self.last.get("kioku_context_tokens", {}))
        else:
            return False
        return True

    def take_turn(self, line: str) -> None:
        """Send ``line`` through the graph; show its memory notices and the reply."""
        config: RunnableConfig = {"configurable": {"thread_id": f"cli-{self.channel}"}}
        for mode, part in self.graph.stream(
            {"messages": [HumanMessage(line, name=self.user.display_name)]},
            config,
            context=self._context(),
            stream_mode=["custom", "values"],
        ):
            chunk: Any = part
            if mode == "custom":
                notice = chunk["notice"]
                self.console.print(f"[dim]memory {notice['kind']}: {notice['content']}[/]")
            else:
                self.last = chunk
        reply = self.last["messages"][-1] if self.last.get("messages") else None
        if isinstance(reply, AIMessage):
            self.console.print(f"[bold green]Kioku[/]: {reply.text}")

    def _context(self) -> TurnContext:
        """A new turn of the current user in the current channel."""
        return TurnContext(
            server_id=SERVER,
            server_name="Terminal",
            channel_id=self.channel,
            channel_name=self.channel,
            user=self.user,
            persona=self.persona,
            bot_user_id="cli-bot",
            participants=(self.user,),
            turn_id=uuid.uuid4().hex,
        )


def _lineage(store: KiokuStore) -> int | None:
    """Reuse the terminal persona's lineage across sessions, so its memories persist."""
    from sqlalchemy import select

    from kioku._db.models import PersonaRow

    with store.sessions() as session:
        return session.scalar(
            select(PersonaRow.lineage_id).where(PersonaRow.server_id == SERVER).limit(1)
        )
