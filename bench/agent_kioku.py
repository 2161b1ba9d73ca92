"""kioku's contender in the agent benchmark: exactly the README Quickstart's agent.

``create_agent(model, tools=memory_tools(store), middleware=[KiokuMemoryMiddleware(store)],
context_schema=TurnContext, checkpointer=store.checkpointer())``, invoked with
``context=TurnContext.for_user(USER, thread_id=...)``. Each turn the model calls
``update_long_term_memory`` on one of the user's personal memories (the count stays
steady), then answers. The user's two scopes (their personal memories and their own
space's server-wide memories) hold ``per_scope`` memories each.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from langchain.agents import create_agent
from langchain_core.embeddings import Embeddings
from langchain_core.messages import AIMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from sqlalchemy import insert, text

from bench.agent_model import (
    UPDATABLE,
    USER,
    Contender,
    ToolThenAnswer,
    scripted_model,
    update_text,
)
from bench.common import open_store
from bench.corpus import DIM
from kioku import KiokuMemoryMiddleware, KiokuStore, TurnContext, memory_tools, user_space
from kioku._context import DEFAULT_PERSONA
from kioku._db.models import Memory
from kioku._embeddings import EmbedderSpec
from kioku.testing import call_tool

SCOPES = ("target_user", "server_wide")
"""kioku's two scopes of a ``for_user`` app: the user's memories and their space's."""


@dataclass(frozen=True)
class KiokuSetup:
    """Where and how big: the database, the memories per scope, their texts' vectors."""

    url: str
    """The database the memories are loaded into."""
    per_scope: int
    texts: dict[str, list[str]]
    """Scope (:data:`SCOPES`) → its memories' texts (``per_scope`` each)."""
    embeddings: Embeddings
    """Precomputed vectors of every text a turn or a load embeds."""


def kioku_store(setup: KiokuSetup, url: str, **settings: Any) -> KiokuStore:
    """A store on ``url`` with the precomputed embedder, limits fitting ``per_scope``."""
    limits = max(100, setup.per_scope)
    embedder = EmbedderSpec(setup.embeddings, f"hashing-{DIM}", DIM)
    return open_store(
        url,
        embedder,
        max_server_memories=limits,
        max_personal_memories=limits,
        **settings,
    )


def updatable_ids(store: KiokuStore) -> list[int]:
    """The user's first :data:`UPDATABLE` personal memories, the ones turns update."""
    with store.sessions() as session:
        return list(
            session.scalars(
                text(
                    "SELECT id FROM memories WHERE scope = 'personal' AND user_id = :u "
                    "AND status = 'active' ORDER BY id LIMIT :n"
                ),
                {"u": USER, "n": UPDATABLE},
            )
        )


def preload(setup: KiokuSetup) -> None:
    """Load ``per_scope`` memories into each scope, the first of each through the tool.

    The first memory of each scope is created by an agent turn (kioku makes the user's and
    the space's rows its own way); the rest are inserted in bulk, then analysed. The HNSW
    index is built afterwards when the limits call for it, as a deployment would have it.
    """
    store = kioku_store(setup, setup.url, vector_index="exact")
    try:
        contender = kioku_agent(store, "preload", [])
        for n, scope in enumerate(SCOPES):
            contender.policy.call = functools.partial(create_call, scope, setup.texts[scope][0])
            contender.turn(n)
        rows = [
            memory_row(scope, content, setup.embeddings)
            for scope in SCOPES
            for content in setup.texts[scope][1:]
        ]
        with store.transaction() as session:
            for start in range(0, len(rows), 5000):
                session.execute(insert(Memory), rows[start : start + 5000])
        autocommit = store.engine.execution_options(isolation_level="AUTOCOMMIT")
        with autocommit.connect() as connection:
            connection.execute(text("VACUUM ANALYZE memories"))
    finally:
        store.close()
    kioku_store(setup, setup.url).close()  # setup() with vector_index="auto": HNSW if due


def create_call(scope: str, content: str, _turn: int = 0) -> AIMessage:
    """The tool call creating ``content`` in ``scope`` (whatever the turn)."""
    target = {"target_user": USER} if scope == "target_user" else {}
    return call_tool(
        "create_long_term_memory", memory_content=content, memory_scope=scope, **target
    )


def memory_row(scope: str, content: str, embeddings: Embeddings) -> dict[str, Any]:
    """One bulk-loaded memory row of ``scope``."""
    owner = (
        {"scope": "personal", "user_id": USER}
        if scope == "target_user"
        else {"scope": "server", "server_id": user_space(USER)}
    )
    return {
        **owner,
        "persona_lineage_id": DEFAULT_PERSONA.lineage_id,
        "content": content,
        "embedding": embeddings.embed_query(content),
    }


def kioku_agent(
    store: KiokuStore,
    thread_id: str,
    updatable: list[int],
    *,
    checkpointer: BaseCheckpointSaver[Any] | None = None,
    **options: Any,
) -> Contender:
    """The Quickstart's agent on ``store``, updating ``updatable`` memories in turn.

    ``checkpointer`` (default ``store.checkpointer()``) and the middleware's ``options``
    are for :mod:`bench.agent_whatif`'s variations only.
    """

    def call(i: int) -> AIMessage:
        return call_tool(
            "update_long_term_memory",
            memory_id=updatable[i % len(updatable)],
            memory_content=update_text(i),
            target_user=USER,
        )

    policy = ToolThenAnswer(call)
    agent = create_agent(
        scripted_model(policy),
        tools=memory_tools(store),
        middleware=[KiokuMemoryMiddleware(store, **options)],
        context_schema=TurnContext,
        checkpointer=store.checkpointer() if checkpointer is None else checkpointer,
    )
    return Contender(
        agent,
        policy,
        {"configurable": {"thread_id": thread_id}},
        memory_tokens=context_tokens,
        context=TurnContext.for_user(USER, thread_id=thread_id),
    )


def context_tokens(state: dict[str, Any]) -> int:
    """The memory blocks' tokens kioku reports (its context without the dialogue)."""
    tokens = state.get("kioku_context_tokens") or {}
    if isinstance(tokens, dict):
        return int(tokens.get("total", 0)) - int(tokens.get("dialogue", 0))
    return int(tokens)


def build_kioku(
    setup: KiokuSetup, connect_url: str, thread_id: str = "agent-kioku", **changes: Any
) -> Contender:
    """Kioku's contender with every connection opened through ``connect_url``.

    ``changes``: :func:`kioku_agent`'s ``checkpointer`` and middleware options (for
    :mod:`bench.agent_whatif` only).
    """
    store = kioku_store(setup, connect_url)
    contender = kioku_agent(store, thread_id, updatable_ids(store), **changes)
    contender.resources.callback(store.close)
    return contender
