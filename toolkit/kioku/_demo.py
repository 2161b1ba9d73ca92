"""``kioku demo``: a scripted two-channel, two-user conversation through the per-turn graph.

The chat model is scripted (no network, no API key); everything else is real: the
embedded PostgreSQL, the long-term memory tools, short-term memory in LangGraph's
PostgresSaver, and the context the model is shown.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from sqlalchemy import delete

from kioku._context import Participant, Persona, PrivacyLevel, TurnContext
from kioku._db.models import Server, User
from kioku._store import KiokuStore
from kioku.testing import Script, ScriptedChatModel, call_tool, say

SERVER = "demo-server"
ALICE = Participant("demo-alice", "Alice", aliases=("ali",))
BOB = Participant("demo-bob", "Bob", privacy=PrivacyLevel.PARTIAL)


def _last_tool_result(prompt: Sequence[BaseMessage]) -> dict[str, Any]:
    for message in reversed(prompt):
        if isinstance(message, ToolMessage):
            result: dict[str, Any] = json.loads(str(message.content))
            return result
    return {}


def _memory_id(prompt: Sequence[BaseMessage], fragment: str) -> int:
    for message in prompt:
        match = re.search(rf"ID:(\d+) [^\n;]*{re.escape(fragment)}", str(message.content))
        if match:
            return int(match.group(1))
    return 0


def _explain_refusal(prompt: Sequence[BaseMessage], offered: tuple[str, ...]) -> AIMessage:
    return say(f"I can't keep that one, Bob: {_last_tool_result(prompt).get('reason', '')}")


def _correct_tasting(prompt: Sequence[BaseMessage], offered: tuple[str, ...]) -> AIMessage:
    memory_id = _memory_id(prompt, "tea tasting")
    return call_tool(
        "update_long_term_memory",
        memory_id=memory_id,
        memory_content="The tea tasting is on Saturday at 4pm",
    )


def _forget_tasting(prompt: Sequence[BaseMessage], offered: tuple[str, ...]) -> AIMessage:
    return call_tool(
        "update_long_term_memory", memory_id=_memory_id(prompt, "tea tasting"), memory_content=""
    )


def _summarise(prompt: Sequence[BaseMessage], offered: tuple[str, ...]) -> AIMessage:
    if "update_short_term_memory" not in offered:
        return say("Happy brewing!")
    return call_tool(
        "update_short_term_memory",
        summary="Alice and Bob are planning Saturday's tea tasting: jasmine for Alice, "
        "no coffee anywhere near Bob.",
    )


@dataclass
class Turn:
    """One user message, in a channel, with the model's scripted replies."""

    channel: str
    speaker: Participant
    text: str
    replies: tuple[Any, ...]


TURNS = (
    Turn(
        "general",
        ALICE,
        "Please remember that I love jasmine tea.",
        (
            call_tool(
                "create_long_term_memory",
                memory_content="{user} loves jasmine tea",
                memory_scope="target_user",
                target_user="Alice",
            ),
            say("Noted, Alice: jasmine it is."),
        ),
    ),
    Turn(
        "general",
        BOB,
        "Kioku, remember that I can't stand coffee.",
        (
            call_tool(
                "create_long_term_memory",
                memory_content="{user} can't stand coffee",
                memory_scope="target_user",
                target_user="Bob",
            ),
            _explain_refusal,
        ),
    ),
    Turn(
        "general",
        ALICE,
        "Note that the tea tasting is on Friday.",
        (
            call_tool(
                "create_long_term_memory",
                memory_content="The tea tasting is on Friday",
                memory_scope="server_wide",
            ),
            say("Friday's tasting is in my notes."),
        ),
    ),
    Turn(
        "general",
        BOB,
        "Correction: the tasting moved to Saturday at 4pm.",
        (
            _correct_tasting,
            say("Updated: Saturday at 4pm."),
        ),
    ),
    Turn(
        "general",
        ALICE,
        "Should we bring jasmine and oolong?",
        (
            _summarise,
            say("Jasmine and oolong sound perfect."),
        ),
    ),
    Turn(
        "garden",
        ALICE,
        "Hello from the garden! What were we planning?",
        (say("The tasting on Saturday at 4pm, with jasmine and oolong."),),
    ),
    Turn(
        "garden",
        ALICE,
        "The tasting is cancelled, please forget it.",
        (
            _forget_tasting,
            say("Forgotten. No tasting this week."),
        ),
    ),
)


def _reset(store: KiokuStore) -> None:
    """Remove what an earlier demo run left, so every run starts the same way."""
    with store.transaction() as session:
        session.execute(delete(Server).where(Server.id == SERVER))
        session.execute(delete(User).where(User.id.in_([ALICE.user_id, BOB.user_id])))


def _setup(store: KiokuStore) -> Persona:
    _reset(store)
    with store.accounts() as accounts:
        accounts.upsert_server(SERVER, "Tea House", self_teaching_enabled=True)
        persona = accounts.create_persona(SERVER, "Kioku")
        accounts.upsert_user(ALICE.user_id, ALICE.display_name, aliases=ALICE.aliases)
        accounts.upsert_user(BOB.user_id, BOB.display_name, privacy=BOB.privacy)
        accounts.add_member(SERVER, ALICE.user_id)
        accounts.add_member(SERVER, BOB.user_id)
    return persona


def _context(persona: Persona, turn: Turn) -> TurnContext:
    return TurnContext(
        server_id=SERVER,
        server_name="Tea House",
        channel_id=f"demo-{turn.channel}",
        channel_name=turn.channel,
        user=turn.speaker,
        persona=persona,
        bot_user_id="demo-bot",
        participants=(ALICE, BOB),
    )


def _token_table(tokens: dict[str, int]) -> Table:
    table = Table("block", "tokens", title="tokens per context block")
    for block, count in tokens.items():
        table.add_row(block, str(count))
    return table


def run_demo(store: KiokuStore, console: Console | None = None) -> list[dict[str, Any]]:
    """Play the scripted conversation; returns every tool result, in order."""
    from kioku.graphs._turn import build_graph

    console = console or Console()
    persona = _setup(store)
    console.print(
        "[dim]Model: scripted (no API key needed). For a real model: set OPENAI_API_KEY "
        "and run `kioku chat`.[/]\n"
        f"Server [bold]Tea House[/], persona [bold]{persona.name}[/] (lineage "
        f"{persona.lineage_id}); Alice (privacy MINIMAL), Bob (privacy PARTIAL); channels "
        "#general and #garden.\n"
    )
    script = Script()
    graph = build_graph(
        ScriptedChatModel(script=script),
        store,
        checkpointer=store.checkpointer(),
        system_prompt="You are Kioku, the tea house's assistant.",
    )
    results: list[dict[str, Any]] = []
    last_state: dict[str, Any] = {}
    previous: Turn | None = None
    for turn in TURNS:
        if previous is not None and previous.channel != turn.channel:
            _show_stm(console, store, _context(persona, previous))
        previous = turn
        script.add(*turn.replies)
        console.rule(f"#{turn.channel}")
        console.print(f"[bold cyan]{turn.speaker.display_name}[/]: {turn.text}")
        config: RunnableConfig = {
            "configurable": {"thread_id": f"demo-{persona.lineage_id}-{turn.channel}"}
        }
        stream = graph.stream(
            {"messages": [HumanMessage(turn.text, name=turn.speaker.display_name)]},
            config,
            context=_context(persona, turn),
            stream_mode=["custom", "updates", "values"],
        )
        for mode, part in stream:
            chunk = cast(dict[str, Any], part)
            if mode == "custom":
                notice = chunk["notice"]
                console.print(
                    Panel(
                        f"{notice['content']}\n[dim]{notice['footer']}[/]",
                        expand=False,
                        title=f"memory {notice['kind']} ({notice['scope']})",
                    )
                )
            elif mode == "values":
                last_state = chunk
            else:
                _show_update(console, chunk, results)
    console.rule("what the model saw in #garden, last turn")
    context_text = "\n\n".join(str(m.content) for m in last_state.get("kioku_memory_context", []))
    console.print(Panel(context_text, expand=False))
    console.print(_token_table(last_state.get("kioku_context_tokens", {})))
    return results


def _show_stm(console: Console, store: KiokuStore, context: TurnContext) -> None:
    from kioku._stm.model import StmKey
    from kioku._stm.store import ShortTermMemory

    assert context.server_id is not None
    key = StmKey("server", context.server_id, context.channel_id, context.persona.lineage_id)
    entry = ShortTermMemory(store).get(key)
    if entry is None:
        return
    console.print(
        Panel(
            f"{len(entry.messages)} messages captured (newest: "
            f"{entry.messages[-1].speaker}: {entry.messages[-1].text!r})\n"
            f"summary: {entry.summary or '(none yet)'}",
            title=f"short-term memory of #{context.channel_name}",
            expand=False,
        )
    )


def _show_update(console: Console, update: dict[str, Any], results: list[dict[str, Any]]) -> None:
    for node, values in update.items():
        for message in (values or {}).get("messages", []):
            if node == "generate" and isinstance(message, AIMessage):
                for call in message.tool_calls:
                    console.print(
                        f"  [magenta]→ {call['name']}[/]("
                        f"{json.dumps(call['args'], ensure_ascii=False)})"
                    )
                if message.content:
                    console.print(f"[bold green]Kioku[/]: {message.content}")
            elif node == "tools" and isinstance(message, ToolMessage):
                result = json.loads(str(message.content))
                results.append(result)
                ok = "successfully" in result.get("status", "")
                colour = "green" if ok else "yellow"
                console.print(f"  [{colour}]← {result.get('status')}[/]")
                if not ok and result.get("reason"):
                    console.print(f"    [dim]{result['reason']}[/]")
