"""The peers of the agent benchmark: LangMem, Mem0 OSS and a bare agent, each a ``create_agent``.

Each is configured as its own documentation shows, on the same database as kioku, with
the same scripted model, the same precomputed embeddings and the same thread trimming
(:class:`bench.agent_model.TrimThread`, kioku's 20 messages):

``langmem`` — ``create_manage_memory_tool`` and ``create_search_memory_tool`` on
``("memories", "{langgraph_user_id}")``, the agent given LangGraph's ``PostgresStore``
(flat halfvec index, cosine, field ``content``; its own schema) as ``store=``, the user
in ``configurable.langgraph_user_id``. A middleware searches the user's namespace with
the latest user message (limit 10, once per user message) and puts the hits before the
model. Each turn the model calls ``manage_memory`` (``action="update"``).

``mem0`` — Mem0 OSS on pgvector in the same database, the embeddings through its
``langchain`` embedder, no LLM. A middleware searches before the model (``Memory.search``,
limit 10, once per user message) and puts the hits in the prompt; after the agent,
``Memory.add`` of the user message and the reply with ``infer=False`` (mem0 stores each
message as a memory, so its count grows by two a turn). The model's tool wraps
``Memory.update``.

``bare`` — no memory: the model calls a no-op tool, then answers (the same steps).

Every peer's checkpointer is LangGraph's ``PostgresSaver.from_conn_string`` (one
autocommit connection, ``dict_row``), its tables the same as kioku's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain_core.embeddings import Embeddings
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.tools import StructuredTool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.config import get_config
from langgraph.runtime import Runtime
from langgraph.store.base import PutOp
from langgraph.store.postgres import PostgresStore
from langgraph.store.postgres.base import PostgresIndexConfig

from bench.agent_model import (
    UPDATABLE,
    USER,
    Contender,
    ToolThenAnswer,
    TrimThread,
    scripted_model,
    update_text,
)
from bench.common import analyze_store, libpq, prepare_database
from bench.corpus import DIM
from bench.peer_data import memory_key
from bench.peers_mem0 import mem0_payload, open_mem0
from kioku._context_build.tokens import TiktokenCounter
from kioku.testing import call_tool

PEER_NAMES = ("langmem", "mem0", "bare")
LANGMEM_SCHEMA = "agent_langmem"
MEM0_TABLE = "agent_mem0"
HITS = 10
"""Memories each peer's search puts before the model."""


@dataclass(frozen=True)
class PeerSetup:
    """The database and the user's memories (one scope: the user's namespace)."""

    url: str
    texts: list[str]
    embeddings: Embeddings


# --- shared pieces ------------------------------------------------------------------------


def latest_question(messages: Sequence[Any]) -> HumanMessage | None:
    """The latest user message of ``messages``."""
    return next((m for m in reversed(messages) if isinstance(m, HumanMessage)), None)


class MemoryPrompt(AgentMiddleware[AgentState[Any], Any, Any]):
    """Puts ``search(question)``'s hits before the model, searching once per user message.

    ``tokens`` is the memory text's size (cl100k) at the latest model call.
    """

    def __init__(self, search: Callable[[str], list[str]]) -> None:
        """Search with ``search``."""
        super().__init__()
        self.search = search
        self.count = TiktokenCounter()
        self.tokens = 0
        self._cached: tuple[str | None, str] = (None, "")

    def _memories(self, question: HumanMessage) -> str:
        if self._cached[0] != question.id or question.id is None:
            hits = self.search(question.text)
            text = "## Memories\n" + "\n".join(f"- {hit}" for hit in hits)
            self._cached = (question.id, text)
            self.tokens = self.count(text)
        return self._cached[1]

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        """The request with the memories as its system message."""
        question = latest_question(request.messages)
        if question is None:
            return handler(request)
        return handler(request.override(system_message=SystemMessage(self._memories(question))))


def saver(resources: ExitStack, connect_url: str) -> PostgresSaver:
    """LangGraph's ``PostgresSaver`` as its docs build it (its tables set up)."""
    checkpointer = resources.enter_context(PostgresSaver.from_conn_string(libpq(connect_url)))
    checkpointer.setup()
    return checkpointer


def peer_contender(
    name: str,
    tools: list[Any],
    policy: ToolThenAnswer,
    middleware: list[AgentMiddleware[Any, Any, Any]],
    resources: ExitStack,
    connect_url: str,
    tokens: Callable[[dict[str, Any]], int],
    checkpointer: BaseCheckpointSaver[Any] | None = None,
    **agent: Any,
) -> Contender:
    """A ``create_agent`` on ``PostgresSaver`` (or ``checkpointer``), trimmed as kioku's."""
    graph = create_agent(
        scripted_model(policy),
        tools=tools,
        middleware=[*middleware, TrimThread()],
        checkpointer=saver(resources, connect_url) if checkpointer is None else checkpointer,
        **agent,
    )
    config = {"configurable": {"thread_id": f"agent-{name}", "langgraph_user_id": USER}}
    return Contender(graph, policy, config, tokens, resources=resources)  # type: ignore[arg-type]


# --- LangMem ------------------------------------------------------------------------------


def langmem_index(embeddings: Embeddings) -> PostgresIndexConfig:
    """The store's index: flat halfvec, cosine, LangMem's ``content`` field."""
    return {
        "dims": DIM,
        "embed": embeddings,
        "fields": ["content"],
        "ann_index_config": {"kind": "flat", "vector_type": "halfvec"},
        "distance_type": "cosine",
    }


def preload_langmem(setup: PeerSetup) -> None:
    """The user's memories in LangMem's value shape, then the tables analysed."""
    ext = prepare_database(setup.url, [LANGMEM_SCHEMA])
    conninfo = libpq(setup.url, LANGMEM_SCHEMA, ext)
    with PostgresStore.from_conn_string(conninfo, index=langmem_index(setup.embeddings)) as store:
        store.setup()
        store.batch(
            [
                PutOp(("memories", USER), memory_key("personal", USER, n), {"content": t})
                for n, t in enumerate(setup.texts)
            ]
        )
    analyze_store(conninfo)


def build_langmem(setup: PeerSetup, connect_url: str) -> Contender:
    """LangMem's tools and ``store=``, a search-before-the-model middleware."""
    from langmem import create_manage_memory_tool, create_search_memory_tool

    resources = ExitStack()
    ext = prepare_database(setup.url, [LANGMEM_SCHEMA])
    store = resources.enter_context(
        PostgresStore.from_conn_string(
            libpq(connect_url, LANGMEM_SCHEMA, ext), index=langmem_index(setup.embeddings)
        )
    )
    namespace = ("memories", "{langgraph_user_id}")

    def search(question: str) -> list[str]:
        user = get_config()["configurable"]["langgraph_user_id"]
        hits = store.search(("memories", user), query=question, limit=HITS)
        return [str(hit.value["content"]) for hit in hits]

    def call(i: int) -> AIMessage:
        key = memory_key("personal", USER, i % UPDATABLE)
        return call_tool("manage_memory", action="update", id=key, content=update_text(i, USER))

    prompt = MemoryPrompt(search)
    tools = [create_manage_memory_tool(namespace), create_search_memory_tool(namespace)]
    return peer_contender(
        "langmem",
        tools,
        ToolThenAnswer(call),
        [prompt],
        resources,
        connect_url,
        lambda _: prompt.tokens,
        store=store,
    )


# --- Mem0 ---------------------------------------------------------------------------------


def preload_mem0(setup: PeerSetup) -> None:
    """The user's memories as ``add(infer=False)`` stores them, in bulk; then analysed."""
    with ExitStack() as loading:
        memory = open_mem0(loading, libpq(setup.url), setup.embeddings, DIM, MEM0_TABLE)
        at = datetime.now(UTC) - timedelta(days=1)
        memory.vector_store.insert(
            vectors=setup.embeddings.embed_documents(setup.texts),
            payloads=[mem0_payload(t, {"user_id": USER}, at) for t in setup.texts],
            ids=[memory_key("personal", USER, n) for n in range(len(setup.texts))],
        )
    with psycopg.connect(libpq(setup.url), autocommit=True) as admin:
        admin.execute(f"ANALYZE {MEM0_TABLE}")


class Mem0Capture(AgentMiddleware[AgentState[Any], Any, Any]):
    """After the agent: ``Memory.add`` of the turn's user message and reply, no inference."""

    def __init__(self, memory: Any) -> None:
        """Add to ``memory``."""
        super().__init__()
        self.memory = memory

    def after_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Store the user message and the final answer as memories of the user."""
        question = latest_question(state["messages"])
        answer = state["messages"][-1]
        if question is not None:
            said = [
                {"role": "user", "content": question.text},
                {"role": "assistant", "content": answer.text},
            ]
            self.memory.add(said, user_id=USER, infer=False)
        return None


def build_mem0(setup: PeerSetup, connect_url: str) -> Contender:
    """Mem0 OSS: search before the model, ``add(infer=False)`` after, an update tool."""
    resources = ExitStack()
    memory = open_mem0(resources, libpq(connect_url), setup.embeddings, DIM, MEM0_TABLE)

    def search(question: str) -> list[str]:
        # threshold 0: all 10 hits, as the other contenders show (hashing vectors' low
        # similarities fall under mem0's default 0.1, which real embeddings would pass).
        found = memory.search(question, top_k=HITS, threshold=0.0, filters={"user_id": USER})
        return [str(hit["memory"]) for hit in found["results"]]

    def update_memory(memory_id: str, text: str) -> str:
        """Replace the text of the memory ``memory_id``."""
        return json.dumps(memory.update(memory_id, text=text))

    def call(i: int) -> AIMessage:
        key = memory_key("personal", USER, i % UPDATABLE)
        return call_tool("update_memory", memory_id=key, text=update_text(i, USER))

    prompt = MemoryPrompt(search)
    tool = StructuredTool.from_function(update_memory, name="update_memory")
    return peer_contender(
        "mem0",
        [tool],
        ToolThenAnswer(call),
        [prompt, Mem0Capture(memory)],
        resources,
        connect_url,
        lambda _: prompt.tokens,
    )


# --- bare -----------------------------------------------------------------------------------


def noop() -> str:
    """Do nothing (the bare agent's tool, so its turn has the same steps)."""
    return "ok"


def build_bare(
    setup: PeerSetup, connect_url: str, checkpointer: BaseCheckpointSaver[Any] | None = None
) -> Contender:
    """``create_agent`` without memory: a no-op tool, ``PostgresSaver``, trimming.

    ``checkpointer`` instead of ``PostgresSaver``: for :mod:`bench.agent_whatif` only.
    """
    policy = ToolThenAnswer(lambda _: call_tool("noop"))
    tool = StructuredTool.from_function(noop, name="noop")
    resources = ExitStack()
    return peer_contender(
        "bare" if checkpointer is None else "bare-in-memory",
        [tool],
        policy,
        [],
        resources,
        connect_url,
        lambda _: 0,
        checkpointer=checkpointer,
    )


PRELOADS: dict[str, Callable[[PeerSetup], None]] = {
    "langmem": preload_langmem,
    "mem0": preload_mem0,
    "bare": lambda _: None,
}
BUILDERS: dict[str, Callable[[PeerSetup, str], Contender]] = {
    "langmem": build_langmem,
    "mem0": build_mem0,
    "bare": build_bare,
}
