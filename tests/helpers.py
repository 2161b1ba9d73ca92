"""Scenario builders and a ToolNode driver shared by the tests."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from pydantic import AliasChoices
from sqlalchemy import func, insert, select
from sqlalchemy.orm import Session

from kioku import (
    KiokuSettings,
    KiokuStore,
    MemoryNotice,
    Participant,
    Persona,
    PrivacyLevel,
    TurnContext,
    create_long_term_memory_tool,
    update_long_term_memory_tool,
)
from kioku._db.models import Memory, MemoryHistory
from kioku._stm.model import StmKey, StmMessage
from kioku._tools.invoke import arun_tool_call, run_tool_call
from kioku._tools.search import search_long_term_memory_tool

BOT_ID = "bot-1"
SETTING_VARIABLES = frozenset(
    name
    for field in KiokuSettings.model_fields.values()
    if isinstance(field.validation_alias, AliasChoices)
    for name in field.validation_alias.choices
    if isinstance(name, str) and name.isupper()
)
"""The environment variables kioku reads its settings from."""

TABLES = (
    "langgraph_items, memory_history, memories, server_members, personas, users, servers, "
    "stm_threads, checkpoints, checkpoint_blobs, checkpoint_writes"
)
"""Every table a test may fill; the ``store`` fixture empties them afterwards."""


def process_env(database_url: str, **settings: str) -> dict[str, str]:
    """The environment for a kioku subprocess: this one without any kioku setting or model
    key, then the database and ``settings`` (variable names as keywords)."""
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in SETTING_VARIABLES and not name.startswith(("KIOKU_", "OPENAI_"))
    }
    return env | {"KIOKU_DATABASE_URL": database_url, "KIOKU_EMBEDDINGS": "hashing", **settings}


@dataclass
class World:
    """Two servers, a persona per server, and some users."""

    store: KiokuStore
    persona: Persona
    other_persona: Persona
    alice: Participant = field(default_factory=lambda: Participant("u-alice", "Alice", ("ali",)))
    bob: Participant = field(default_factory=lambda: Participant("u-bob", "Bob"))
    carol: Participant = field(
        default_factory=lambda: Participant("u-carol", "Carol", privacy=PrivacyLevel.PARTIAL)
    )
    dave: Participant = field(
        default_factory=lambda: Participant("u-dave", "Dave", privacy=PrivacyLevel.FULL)
    )
    bridge: Participant = field(
        default_factory=lambda: Participant("u-bridge", "Matrix Max", is_bridge=True)
    )
    notices: list[MemoryNotice] = field(default_factory=list)
    run: Callable[[BaseTool, dict[str, Any], TurnContext | None], ToolRun] = field(
        default=lambda tool, args, ctx: run_tool(tool, args, ctx)
    )
    """How tool calls are executed: the sync path, or the async one (``arun_tool``)."""

    def context(self, **overrides: Any) -> TurnContext:
        base = TurnContext(
            server_id="srv-a",
            server_name="Server A",
            channel_id="chan-1",
            channel_name="general",
            user=self.alice,
            persona=self.persona,
            bot_user_id=BOT_ID,
            participants=(self.alice, self.bob, self.carol, self.dave, self.bridge),
            notifier=self.notices.append,
        )
        return replace(base, **overrides)


RUNNERS = {"sync": lambda *a: run_tool(*a), "async": lambda *a: arun_tool(*a)}


def make_world(store: KiokuStore, *, self_teaching: bool = True, runner: str = "sync") -> World:
    with store.accounts() as accounts:
        accounts.upsert_server("srv-a", "Server A", self_teaching_enabled=self_teaching)
        accounts.upsert_server("srv-b", "Server B", self_teaching_enabled=self_teaching)
        persona = accounts.create_persona("srv-a", "Kioku")
        other = accounts.create_persona("srv-b", "Other")
        for user_id, name in [("u-alice", "Alice"), ("u-bob", "Bob"), ("u-erin", "Erin")]:
            accounts.upsert_user(user_id, name)
            accounts.add_member("srv-a", user_id)
        accounts.upsert_user("u-carol", "Carol", privacy=PrivacyLevel.PARTIAL)
        accounts.upsert_user("u-dave", "Dave", privacy=PrivacyLevel.FULL)
        accounts.upsert_user("u-bob2", "Bob")
        accounts.add_member("srv-b", "u-bob2")
        accounts.add_member("srv-b", "u-alice")
    return World(store=store, persona=persona, other_persona=other, run=RUNNERS[runner])


@dataclass
class ToolRun:
    """What one ToolNode execution produced."""

    result: dict[str, Any]
    message: ToolMessage
    custom: list[Any]


def run_tool(tool: BaseTool, args: dict[str, Any], context: TurnContext | None) -> ToolRun:
    """Execute one tool call exactly as LangGraph's ToolNode does inside a graph."""
    outcome = run_tool_call([tool], tool.name, args, context)
    return ToolRun(json.loads(str(outcome.message.content)), outcome.message, outcome.custom_events)


def search_payload(world: World, query: str, limit: int = 5) -> dict[str, Any]:
    """What ``search_long_term_memory`` answers ``query`` in ``world``'s turn."""
    outcome = run_tool_call(
        [search_long_term_memory_tool(world.store)],
        "search_long_term_memory",
        {"query": query, "limit": limit},
        world.context(),
    )
    return dict(json.loads(str(outcome.message.content)))


def create_memory(world: World, args: dict[str, Any], **context: Any) -> int:
    """Create through the tool (the world's runner); the new memory's id."""
    result = world.run(
        create_long_term_memory_tool(world.store), args, world.context(**context)
    ).result
    assert result["status"] == "memory_saved_successfully", result
    return int(result["memory_id"])


def update_memory(world: World, args: dict[str, Any], **context: Any) -> dict[str, Any]:
    """Update (or delete) through the tool; the tool's result."""
    return world.run(
        update_long_term_memory_tool(world.store), args, world.context(**context)
    ).result


def table_counts(store: KiokuStore) -> tuple[int, int]:
    with store.sessions() as session:
        memories = session.scalar(select(func.count()).select_from(Memory)) or 0
        history = session.scalar(select(func.count()).select_from(MemoryHistory)) or 0
    return memories, history


def insert_server_memory(session: Session, world: World, content: str, **columns: Any) -> int:
    """A server memory of ``world``'s persona on srv-a, written straight to the table (no
    tool, no checks): for states a tool would not make, such as one saved without a vector."""
    return session.execute(
        insert(Memory)
        .values(
            scope="server",
            server_id="srv-a",
            persona_lineage_id=world.persona.lineage_id,
            content=content,
            **columns,
        )
        .returning(Memory.id)
    ).scalar_one()


def memory_row(store: KiokuStore, memory_id: int) -> Memory | None:
    with store.sessions() as session:
        return session.get(Memory, memory_id)


def arun_tool(tool: BaseTool, args: dict[str, Any], context: TurnContext | None) -> ToolRun:
    """Like :func:`run_tool`, through the tool's async path (one event loop per call)."""
    outcome = asyncio.run(arun_tool_call([tool], tool.name, args, context))
    return ToolRun(json.loads(str(outcome.message.content)), outcome.message, outcome.custom_events)


T0 = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


def msgs(*texts: str, start: datetime = T0, speaker: str = "Alice") -> list[StmMessage]:
    """Alternating user/bot messages a minute apart, starting at ``start``."""
    return [
        StmMessage(
            "user" if i % 2 == 0 else "assistant",
            speaker if i % 2 == 0 else "Kioku",
            t,
            start + timedelta(minutes=i),
        )
        for i, t in enumerate(texts)
    ]


def server_key(world: World, channel: str = "chan-1") -> StmKey:
    return StmKey("server", "srv-a", channel, world.persona.lineage_id)


def user_key(world: World, channel: str = "chan-1", user: str = "u-alice") -> StmKey:
    return StmKey("user", user, channel, world.persona.lineage_id)
