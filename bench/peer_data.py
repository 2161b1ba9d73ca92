"""What the per-turn benchmark's peers (:mod:`bench.peers`) share.

The data every peer loads and asks (:class:`PeerData`), the built peers (:class:`Peers`),
precomputed vectors, the prompt every turn renders and counts, and short-term memory as
LangGraph keeps it (a ``MessagesState`` graph on ``PostgresSaver``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.messages import AIMessage, AnyMessage, RemoveMessage
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph

from bench.common import libpq
from bench.corpus import Lookup

KEEP_MESSAGES = 20
"""Short-term memory keeps the last 20 messages of a channel, as kioku does."""

OTHER_CHANNELS_READ = 4
"""Other-channel short-term entries a turn reads (kioku's default cap)."""

REPLY = "Here is what I remember."
SCHEMAS = {
    "postgres_store_flat": "peers_store_flat",
    "postgres_store_hnsw": "peers_store_hnsw",
    "langmem": "peers_langmem",
    "raw_sql_floor": "peers_raw",
    "raw_sql_vector_floor": "peers_raw",
}
STM_SCHEMA = "peers_stm"
MEM0_COLLECTION = "peers_mem0"
UPDATABLE = 20
"""The speaker's first 20 memories are the ones turns update, in turn."""


@dataclass(frozen=True)
class PeerData:
    """What every peer loads and what its turns ask."""

    url: str
    """SQLAlchemy URL of the database (``postgresql+psycopg://...``)."""
    dim: int
    embeddings: Embeddings
    """Precomputed lookup: embedding cost is kept out of the timings."""
    server_id: str
    server_texts: list[str]
    personal: dict[str, list[str]]
    """Participant user id → that person's memories."""
    questions: list[str]
    speaker: str
    """The participant talking: updates go to their memories."""
    channels: int = 50
    """Other channels whose short-term memory is loaded (10 messages each)."""


@dataclass
class Peers:
    """Built peers: ``turns[name](i)`` runs turn ``i``; ``close()`` releases everything."""

    turns: dict[str, Callable[[int], None]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    """Peer → why it could not be built."""
    found: dict[str, int] = field(default_factory=dict)
    """Peer → memories its last turn rendered (a sanity check on filtered ANN search)."""
    resources: ExitStack = field(default_factory=ExitStack)
    raw_loaded: bool = False
    """Whether the raw floors' shared tables were loaded by this build."""

    def close(self) -> None:
        """Close every connection, pool and temporary directory."""
        self.resources.close()


def update_text(speaker: str, i: int) -> str:
    """The content turn ``i`` writes into one of the speaker's memories."""
    return f"{speaker} asked about topic {i % 97} in turn batch {i % 13}"


def stm_message(role: str, text: str) -> dict[str, str]:
    """One short-term-memory message as the peers keep it (role, text, when)."""
    return {"role": role, "text": text, "at": datetime.now(UTC).isoformat()}


def seed_messages(channel: str) -> list[dict[str, str]]:
    """Ten messages of an existing channel."""
    return [
        stm_message("user" if i % 2 == 0 else "assistant", f"message {i} in {channel}")
        for i in range(10)
    ]


class Prompt:
    """Renders memory sections into a prompt and counts its tokens (cl100k, cached lines)."""

    def __init__(self) -> None:
        """Load the offline cl100k counter lazily."""
        from kioku._context_build.tokens import TiktokenCounter

        self.count = TiktokenCounter()

    def render(self, sections: Sequence[tuple[str, Sequence[str]]]) -> tuple[str, int]:
        """The prompt text and its token count."""
        lines: list[str] = []
        for title, items in sections:
            lines.append(f"## {title}")
            lines.extend(f"- {item}" for item in items)
        prompt = "\n".join(lines)
        return prompt, sum(self.count(line) for line in lines)


def memory_key(kind: str, owner: str, n: int) -> str:
    """A deterministic key (a UUID, as LangMem and mem0 expect) for memory ``n`` of ``owner``."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"kioku-peers/{kind}/{owner}/{n}"))


def precomputed(data: PeerData) -> Lookup:
    """The questions' and every update text's vectors, computed before any timing."""
    updates = [update_text(data.speaker, i) for i in range(97 * 13)]
    return Lookup.of([*data.questions, *dict.fromkeys(updates)], data.embeddings)


def stm_graph(saver: PostgresSaver) -> CompiledStateGraph[Any, Any, Any, Any]:
    """One node that appends the reply and keeps the thread to the last 20 messages."""

    def reply(state: MessagesState) -> dict[str, list[AnyMessage | RemoveMessage]]:
        messages = state["messages"]
        excess = len(messages) + 1 - KEEP_MESSAGES
        removed: list[AnyMessage | RemoveMessage] = [
            RemoveMessage(id=m.id) for m in messages[: max(0, excess)] if m.id is not None
        ]
        return {"messages": [*removed, AIMessage(REPLY)]}

    graph = StateGraph(MessagesState)
    graph.add_node("reply", reply)
    graph.add_edge(START, "reply")
    graph.add_edge("reply", END)
    return graph.compile(checkpointer=saver)


def open_stm(resources: ExitStack, url: str, extension_schema: str) -> PostgresSaver:
    """A PostgresSaver in its own schema (kioku's saver keeps the public tables)."""
    saver = resources.enter_context(
        PostgresSaver.from_conn_string(libpq(url, STM_SCHEMA, extension_schema))
    )
    saver.setup()
    return saver
