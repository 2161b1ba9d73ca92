"""Fair peers for the per-turn benchmark (issue #13): the same turn, done with other tools.

kioku's turn (bench/turn.py): intent gate, context build (the server's memories, each
participant's personal memories, relevance retrieval when a block overflows, this
channel's and other channels' short-term memory, rendering, token counting), one memory
update through the tool path, and capture of the user message and the reply into short-term
memory. Each peer below does the equivalent work per turn the way a competent user of its
library would set it up. Query and document embeddings are precomputed for every peer
(lookups), as for kioku; token counts use kioku's cached cl100k counter line by line.
Every contender's tables are analysed after loading, as autovacuum soon would.

``postgres_store_flat`` — LangGraph ``PostgresStore``, halfvec vectors, no ANN index (exact
search, as kioku searches a scope up to 2,000 memories). Per turn, one ``store.batch`` of
reads: a vector search (limit 10) of the server's namespace and of each participant's, a
get of this channel's short-term entry and a listing of the 4 newest other-channel entries;
the results rendered into a prompt and its tokens counted; then one ``store.batch`` of
writes: a put of the updated memory (re-embedded, lookup) and puts of the two short-term
entries (the channel's and the speaker's), each keeping the last 20 messages.

``postgres_store_hnsw`` — the same with an HNSW index on halfvec (as kioku uses for scopes
beyond 2,000 memories). PostgresStore filters the namespace after the index scan, so small
namespaces may come back with fewer than 10 results at scale (see ``Peers.found``).

``langmem`` — LangMem 0.0.30's tools over a PostgresStore (halfvec, flat, field
``content``, LangMem's value shape): ``create_search_memory_tool`` on
``("memories", server_id)`` and on ``("memories", "{langgraph_user_id}")`` invoked for the
server and for each participant (limit 10); the results rendered and counted;
``create_manage_memory_tool`` with ``action="update"`` and the memory's id for the speaker;
then short-term memory as LangGraph keeps it: a ``MessagesState`` graph compiled with
``PostgresSaver`` (same database), invoked once with the user message, its one node
appending the assistant reply (no LLM) and removing messages beyond the last 20.
LangGraph threads are per channel; it does not read other channels' short-term memory.

``mem0`` — Mem0 OSS 2.2.1, pgvector on the same database (its defaults: ``vector`` column,
HNSW index), the same embeddings through its ``langchain`` embedder, telemetry off, no LLM
call (memories loaded as ``add(infer=False)`` stores them, written directly in bulk).
Per turn: ``Memory.search`` (top_k 10, threshold 0 so that all 10 hits come back as for the
other peers) with ``filters={"agent_id": server_id}`` and with
``filters={"user_id": ...}`` for each participant (mem0 runs a vector and a keyword query
for each; without spaCy it neither lemmatizes nor extracts entities), rendered and counted;
``Memory.update(memory_id, text=...)`` (reads the row, updates vector and payload, writes
its SQLite history); then the same ``PostgresSaver`` graph as the LangMem peer. mem0's
vector query filters its jsonb payload after the HNSW scan (no iterative scan), so once the
planner uses the index (e.g. 100,000 server memories) small scopes come back empty: the
turn renders fewer memories (``Peers.found``).

``raw_sql_floor`` — hand-written SQL doing the SQL work of kioku's turn, over one psycopg
connection (pipeline mode, each transaction an explicit BEGIN ... COMMIT sent with its
statements) on a kioku-like ``memories`` table (halfvec, importance, a stored English
``tsvector`` with a GIN index, same rows) in its own schema, HNSW index only when a scope
exceeds 2,000 rows (as kioku). Per turn, one pipelined read transaction: the server's
settings row, the newest 50 of the server's memories, the newest 50 of each
participant's (one LATERAL query), a hybrid ranking of the server's memories and one of
the participants' (each: the 100 nearest by vector, exact or HNSW with iterative scan at
scale, and the 100 best ``ts_rank_cd`` matches of any query word; ids, content,
importance and time), this channel's short-term entry and the 4 newest other-channel
entries; the rankings fused in Python (reciprocal rank fusion with importance), their
best 50 merged with each window, rendered and counted; then the tool's pipelined write
transaction (a history row and the memory's update), and the capture's (upserts of the
two short-term entries: jsonb, appending in SQL and keeping the last 20). They are two
transactions, each committed before the next step, as in every other contender's turn:
the tool's write is done, and its answer back, before the model replies, and the
capture saves that reply. Nothing is cached between turns. This is the floor kioku's
turn is compared with (the issue's "raw psycopg doing the same SQL work").

``raw_sql_vector_floor`` — the floor as it was until the same SQL work was asked of it, for
reference: the same tables and statements, but its retrieval is the server's 10 nearest
by vector alone (no text search, no ranking of personal memories, no settings), and the
tool's write and the capture share one transaction (one commit, one round trip).

Run: .venv/bin/python -m bench.peers [--which raw_sql_floor langmem] [--turns 100]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import tempfile
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
from langchain_core.embeddings import Embeddings
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, RemoveMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.base import GetOp, Item, Op, PutOp, SearchOp
from langgraph.store.postgres import PostgresStore
from langgraph.store.postgres.base import PostgresIndexConfig

from bench.common import analyze_store, libpq, prepare_database
from bench.search import Rounds
from kioku._db.vectors import EXACT_SEARCH_MAX_ROWS

PEERS = (
    "postgres_store_flat",
    "postgres_store_hnsw",
    "langmem",
    "mem0",
    "raw_sql_floor",
    "raw_sql_vector_floor",
)
"""Every peer, in the order they are built and timed."""

KEEP_MESSAGES = 20
"""Short-term memory keeps the last 20 messages of a channel, as kioku does."""

OTHER_CHANNELS_READ = 4
"""Other-channel short-term entries a turn reads (kioku's default cap)."""

WINDOW = 50
"""Newest memories of a scope the raw floor reads, as kioku's memory windows do."""

EXACT_MAX_ROWS = EXACT_SEARCH_MAX_ROWS
"""Above this many rows in a scope, kioku searches through HNSW; the floor does too."""

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


# --- shared helpers --------------------------------------------------------------------


class Precomputed(Embeddings):
    """Vectors of the questions and update texts, computed once; the rest from ``fallback``."""

    def __init__(self, texts: Sequence[str], fallback: Embeddings) -> None:
        """Embed ``texts`` now through ``fallback``."""
        self.fallback = fallback
        self.vectors = dict(zip(texts, fallback.embed_documents(list(texts)), strict=True))

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Look the vectors up."""
        missing = [t for t in texts if t not in self.vectors]
        if missing:
            self.vectors.update(zip(missing, self.fallback.embed_documents(missing), strict=True))
        return [self.vectors[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        """Look one vector up."""
        return self.embed_documents([text])[0]


def update_text(speaker: str, i: int) -> str:
    """The content turn ``i`` writes into one of the speaker's memories."""
    return f"{speaker} asked about topic {i % 97} in turn batch {i % 13}"


def stm_message(role: str, text: str) -> dict[str, str]:
    """One short-term-memory message as the stores below keep it."""
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


# --- LangGraph short-term memory: MessagesState + PostgresSaver -------------------------


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


# --- PostgresStore peers ----------------------------------------------------------------


def store_index(data: PeerData, kind: str, embeddings: Embeddings, fld: str) -> PostgresIndexConfig:
    """PostgresStore's index config: halfvec, ``kind`` (flat or hnsw), cosine, one field."""
    return {
        "dims": data.dim,
        "embed": embeddings,
        "fields": [fld],
        "ann_index_config": {"kind": kind, "vector_type": "halfvec"},  # type: ignore[typeddict-item]
        "distance_type": "cosine",
    }


@contextmanager
def open_store(conninfo: str, index: PostgresIndexConfig) -> Iterator[PostgresStore]:
    """A PostgresStore on one connection, its migrations applied."""
    with PostgresStore.from_conn_string(conninfo, index=index) as store:
        store.setup()
        yield store


def load_store(store: PostgresStore, data: PeerData, fld: str, stm: bool) -> None:
    """The memories (and, with ``stm``, the channels' short-term entries) into ``store``."""
    ops: list[Op] = [
        PutOp(("memories", data.server_id), memory_key("server", data.server_id, n), {fld: t})
        for n, t in enumerate(data.server_texts)
    ]
    for user, texts in data.personal.items():
        ops += [
            PutOp(("memories", user), memory_key("personal", user, n), {fld: t})
            for n, t in enumerate(texts)
        ]
    if stm:
        for c in range(data.channels):
            channel = f"channel-{c}"
            ops.append(
                PutOp(("stm", data.server_id), channel, {"messages": seed_messages(channel)}, False)
            )
        current = {"messages": seed_messages("current")}
        ops.append(PutOp(("stm", data.server_id), "current", current, False))
        ops.append(PutOp(("stm_user", data.speaker), "current", current, False))
    for start in range(0, len(ops), 1000):
        store.batch(ops[start : start + 1000])


def store_turn(
    store: PostgresStore, data: PeerData, prompt: Prompt, found: dict[str, int], name: str
) -> Callable[[int], None]:
    """PostgresStore's turn: one batch of reads, render + count, one batch of writes."""
    people = list(data.personal)

    def turn(i: int) -> None:
        question = data.questions[i % len(data.questions)]
        reads: list[Op] = [SearchOp(("memories", data.server_id), query=question, limit=10)]
        reads += [SearchOp(("memories", u), query=question, limit=10) for u in people]
        reads.append(GetOp(("stm", data.server_id), "current"))
        reads.append(GetOp(("stm_user", data.speaker), "current"))
        reads.append(SearchOp(("stm", data.server_id), limit=OTHER_CHANNELS_READ + 1))
        results: list[Any] = store.batch(reads)
        searches: list[list[Item]] = results[: 1 + len(people)]
        channel, own, others = results[1 + len(people) :]
        sections = [("Server memories", [h.value["text"] for h in searches[0]])]
        sections += [
            (f"About {u}", [h.value["text"] for h in hits])
            for u, hits in zip(people, searches[1:], strict=True)
        ]
        current = channel.value["messages"] if isinstance(channel, Item) else []
        sections.append(("This channel", [m["text"] for m in current]))
        sections += [
            (f"In {o.key}", [m["text"] for m in o.value["messages"]])
            for o in others
            if o.key != "current"
        ][:OTHER_CHANNELS_READ]
        prompt.render(sections)
        found[name] = sum(len(s) for s in searches)
        new = [stm_message("user", question), stm_message("assistant", REPLY)]
        own_messages = own.value["messages"] if isinstance(own, Item) else []
        n = i % UPDATABLE
        store.batch(
            [
                PutOp(
                    ("memories", data.speaker),
                    memory_key("personal", data.speaker, n),
                    {"text": update_text(data.speaker, i)},
                ),
                PutOp(
                    ("stm", data.server_id),
                    "current",
                    {"messages": (current + new)[-KEEP_MESSAGES:]},
                    False,
                ),
                PutOp(
                    ("stm_user", data.speaker),
                    "current",
                    {"messages": (own_messages + new)[-KEEP_MESSAGES:]},
                    False,
                ),
            ]
        )

    return turn


def build_store_peer(
    peers: Peers, data: PeerData, name: str, kind: str, conn: str, ext: str, load: bool
) -> None:
    """``postgres_store_flat`` or ``postgres_store_hnsw``."""
    embeddings = precomputed(data)
    index = store_index(data, kind, embeddings, "text")
    if load:
        with open_store(libpq(data.url, SCHEMAS[name], ext), index) as loader:
            load_store(loader, data, "text", stm=True)
        analyze_store(libpq(data.url, SCHEMAS[name], ext))
    store = peers.resources.enter_context(open_store(libpq(conn, SCHEMAS[name], ext), index))
    peers.turns[name] = store_turn(store, data, Prompt(), peers.found, name)


def precomputed(data: PeerData) -> Precomputed:
    """The questions' and every update text's vectors, computed before any timing."""
    updates = [update_text(data.speaker, i) for i in range(97 * 13)]
    return Precomputed([*data.questions, *dict.fromkeys(updates)], data.embeddings)


# --- LangMem ------------------------------------------------------------------------------


def build_langmem(peers: Peers, data: PeerData, conn: str, ext: str, load: bool) -> None:
    """LangMem's search and manage tools over a flat halfvec PostgresStore, + PostgresSaver."""
    from langmem import create_manage_memory_tool, create_search_memory_tool

    embeddings = precomputed(data)
    index = store_index(data, "flat", embeddings, "content")
    if load:
        with open_store(libpq(data.url, SCHEMAS["langmem"], ext), index) as loader:
            load_store(loader, data, "content", stm=False)
        analyze_store(libpq(data.url, SCHEMAS["langmem"], ext))
    store = peers.resources.enter_context(open_store(libpq(conn, SCHEMAS["langmem"], ext), index))
    graph = stm_graph(open_stm(peers.resources, conn, ext))
    search_server = create_search_memory_tool(("memories", data.server_id), store=store)
    search_person = create_search_memory_tool(("memories", "{langgraph_user_id}"), store=store)
    manage = create_manage_memory_tool(("memories", "{langgraph_user_id}"), store=store)
    prompt, people = Prompt(), list(data.personal)
    thread: RunnableConfig = {"configurable": {"thread_id": f"langmem:{data.server_id}:current"}}

    def turn(i: int) -> None:
        question = data.questions[i % len(data.questions)]
        found = [json.loads(search_server.invoke({"query": question, "limit": 10}))]
        for user in people:
            config = {"configurable": {"langgraph_user_id": user}}
            found.append(json.loads(search_person.invoke({"query": question, "limit": 10}, config)))
        sections = [("Server memories", [m["value"]["content"] for m in found[0]])]
        sections += [
            (f"About {u}", [m["value"]["content"] for m in hits])
            for u, hits in zip(people, found[1:], strict=True)
        ]
        prompt.render(sections)
        peers.found["langmem"] = sum(len(s) for s in found)
        result = manage.invoke(
            {
                "action": "update",
                "id": memory_key("personal", data.speaker, i % UPDATABLE),
                "content": update_text(data.speaker, i),
            },
            {"configurable": {"langgraph_user_id": data.speaker}},
        )
        assert str(result).startswith("updated memory"), result
        graph.invoke({"messages": [HumanMessage(question, name=data.speaker)]}, thread)

    peers.turns["langmem"] = turn


# --- mem0 ---------------------------------------------------------------------------------


def mem0_payload(text: str, scope: dict[str, str], at: datetime) -> dict[str, Any]:
    """The payload mem0's ``add(infer=False)`` stores for ``text`` (no spaCy: no lemmas)."""
    return {
        "data": text,
        "hash": hashlib.md5(text.encode()).hexdigest(),
        "created_at": at.isoformat(),
        "updated_at": at.isoformat(),
        "text_lemmatized": text,
        **scope,
    }


def open_mem0(
    resources: ExitStack,
    conninfo: str,
    embeddings: Embeddings,
    dim: int,
    collection: str = MEM0_COLLECTION,
) -> Any:
    """A mem0 ``Memory`` on pgvector (table ``collection``): telemetry off, an unused LLM."""
    os.environ["MEM0_TELEMETRY"] = "False"
    home = resources.enter_context(tempfile.TemporaryDirectory(prefix="kioku-peers-mem0-"))
    os.environ.setdefault("MEM0_DIR", home)
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from mem0 import Memory
    from mem0.configs.base import MemoryConfig

    config = MemoryConfig(
        vector_store={
            "provider": "pgvector",
            "config": {
                "connection_string": conninfo,
                "collection_name": collection,
                "embedding_model_dims": dim,
            },
        },
        embedder={"provider": "langchain", "config": {"model": embeddings}},
        llm={"provider": "langchain", "config": {"model": FakeListChatModel(responses=["{}"])}},
        history_db_path=str(Path(home) / "history.db"),
    )
    memory = Memory(config)
    pool = memory.vector_store.connection_pool
    pool.wait()
    resources.callback(pool.close)
    resources.callback(memory.close)
    return memory


def build_mem0(peers: Peers, data: PeerData, conn: str, ext: str, load: bool) -> None:
    """Mem0 OSS over pgvector on the same database, + PostgresSaver short-term memory."""
    embeddings = precomputed(data)
    if load:
        with ExitStack() as loading:
            loader = open_mem0(loading, libpq(data.url), embeddings, data.dim)
            store = loader.vector_store
            at = datetime.now(UTC) - timedelta(days=1)
            rows: list[tuple[str, str, dict[str, str]]] = [
                (memory_key("server", data.server_id, n), t, {"agent_id": data.server_id})
                for n, t in enumerate(data.server_texts)
            ]
            for user, texts in data.personal.items():
                rows += [
                    (memory_key("personal", user, n), t, {"user_id": user})
                    for n, t in enumerate(texts)
                ]
            for start in range(0, len(rows), 1000):
                chunk = rows[start : start + 1000]
                store.insert(
                    vectors=data.embeddings.embed_documents([t for _, t, _ in chunk]),
                    payloads=[mem0_payload(t, scope, at) for _, t, scope in chunk],
                    ids=[key for key, _, _ in chunk],
                )
            with psycopg.connect(libpq(data.url), autocommit=True) as admin:
                admin.execute(f"ANALYZE {MEM0_COLLECTION}")
    memory = open_mem0(peers.resources, libpq(conn), embeddings, data.dim)
    graph = stm_graph(open_stm(peers.resources, conn, ext))
    prompt, people = Prompt(), list(data.personal)
    thread: RunnableConfig = {"configurable": {"thread_id": f"mem0:{data.server_id}:current"}}

    def turn(i: int) -> None:
        question = data.questions[i % len(data.questions)]
        # threshold 0: all 10 hits per scope, as the other peers render (mem0's default
        # 0.1 drops hashing vectors' low similarities, which real embeddings would pass).
        found = [
            memory.search(question, top_k=10, threshold=0.0, filters={"agent_id": data.server_id})
        ]
        found += [
            memory.search(question, top_k=10, threshold=0.0, filters={"user_id": user})
            for user in people
        ]
        sections = [("Server memories", [m["memory"] for m in found[0]["results"]])]
        sections += [
            (f"About {u}", [m["memory"] for m in hits["results"]])
            for u, hits in zip(people, found[1:], strict=True)
        ]
        prompt.render(sections)
        peers.found["mem0"] = sum(len(s["results"]) for s in found)
        memory.update(
            memory_key("personal", data.speaker, i % UPDATABLE), text=update_text(data.speaker, i)
        )
        graph.invoke({"messages": [HumanMessage(question, name=data.speaker)]}, thread)

    peers.turns["mem0"] = turn


# --- raw SQL floor --------------------------------------------------------------------------


RAW_SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS memories (
    id bigserial PRIMARY KEY,
    scope text NOT NULL,
    server_id text,
    user_id text,
    content text NOT NULL,
    embedding halfvec({dim}) NOT NULL,
    importance real NOT NULL DEFAULT 0.5,
    search_vector tsvector GENERATED ALWAYS AS (to_tsvector('english', content)) STORED,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS memories_server_newest ON memories (server_id, created_at DESC, id DESC)
    WHERE scope = 'server';
CREATE INDEX IF NOT EXISTS memories_personal_newest ON memories (user_id, created_at DESC, id DESC)
    WHERE scope = 'personal';
CREATE INDEX IF NOT EXISTS memories_search ON memories USING gin (search_vector);
CREATE TABLE IF NOT EXISTS memory_history (
    id bigserial PRIMARY KEY,
    memory_id bigint NOT NULL,
    old_content text,
    new_content text NOT NULL,
    changed_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS settings (
    server_id text PRIMARY KEY,
    personal_memories_enabled boolean NOT NULL DEFAULT true,
    self_teaching_enabled boolean NOT NULL DEFAULT true,
    private_channels text[] NOT NULL DEFAULT '{{}}'
);
CREATE TABLE IF NOT EXISTS stm (
    kind text NOT NULL,
    owner text NOT NULL,
    channel text NOT NULL,
    messages jsonb NOT NULL,
    summary text,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (kind, owner, channel)
);
CREATE INDEX IF NOT EXISTS stm_newest ON stm (kind, owner, updated_at DESC);
"""

RAW_SETTINGS = """
SELECT personal_memories_enabled, self_teaching_enabled, private_channels
FROM settings WHERE server_id = %s
"""
RAW_SERVER = """
SELECT content FROM memories WHERE scope = 'server' AND server_id = %s
ORDER BY created_at DESC, id DESC LIMIT %s
"""
RAW_PERSONAL = """
SELECT u.user_id, m.content FROM unnest(%s::text[]) AS u(user_id)
CROSS JOIN LATERAL (
    SELECT content FROM memories
    WHERE scope = 'personal' AND user_id = u.user_id
    ORDER BY created_at DESC, id DESC LIMIT %s
) m
"""
RAW_RELEVANT = """
SELECT content FROM memories WHERE scope = 'server' AND server_id = %s
ORDER BY embedding <=> %s::halfvec LIMIT 10
"""
RAW_RANKING = """
(SELECT id, content, importance, created_at, 'vector' FROM memories WHERE {scope}
 ORDER BY embedding <=> %(vector)s::halfvec LIMIT %(pool)s)
UNION ALL
(SELECT id, content, importance, created_at, 'text'
 FROM memories, to_tsquery('english', %(words)s) q WHERE {scope} AND search_vector @@ q
 ORDER BY ts_rank_cd(search_vector, q) DESC, id LIMIT %(pool)s)
"""
RAW_RANK_SERVER = RAW_RANKING.format(scope="scope = 'server' AND server_id = %(owner)s")
RAW_RANK_PERSONAL = RAW_RANKING.format(scope="scope = 'personal' AND user_id = ANY(%(owners)s)")
RAW_CHANNEL = "SELECT messages FROM stm WHERE kind = 'server' AND owner = %s AND channel = %s"
RAW_OTHERS = """
SELECT channel, messages, summary FROM stm WHERE kind = 'server' AND owner = %s AND channel <> %s
ORDER BY updated_at DESC LIMIT %s
"""
RAW_HISTORY = """
INSERT INTO memory_history (memory_id, old_content, new_content)
SELECT id, content, %s FROM memories WHERE id = %s
"""
RAW_UPDATE = """
UPDATE memories SET content = %s, embedding = %s::halfvec, updated_at = now() WHERE id = %s
"""
RAW_STM_UPSERT = """
INSERT INTO stm AS s (kind, owner, channel, messages) VALUES (%s, %s, %s, %s::jsonb)
ON CONFLICT (kind, owner, channel) DO UPDATE SET
    messages = (
        SELECT coalesce(jsonb_agg(t.e ORDER BY t.n), '[]'::jsonb)
        FROM jsonb_array_elements(s.messages || EXCLUDED.messages) WITH ORDINALITY AS t(e, n)
        WHERE t.n > jsonb_array_length(s.messages || EXCLUDED.messages) - %s
    ),
    updated_at = now()
"""
RANKED = WINDOW
"""Memories each of the same-work floor's rankings keeps (from 2 × as many candidates)."""


def vector_text(vector: Sequence[float]) -> str:
    """The pgvector text form of ``vector``."""
    return "[" + ",".join(f"{x:.6g}" for x in vector) + "]"


def any_word(text: str) -> str:
    """``to_tsquery`` text matching any word of ``text`` (letters and digits only)."""
    words = "".join(c if c.isalnum() else " " for c in text.lower()).split()
    return " | ".join(dict.fromkeys(words)) or "nothing"


def fused(rows: Sequence[tuple[Any, ...]], limit: int) -> list[str]:
    """Contents of the ``limit`` best of a ranking's rows: RRF over both lists, importance.

    A row is ``(id, content, importance, created_at, source)``; rows come in each source's
    rank order.
    """
    scores: dict[int, float] = {}
    contents: dict[int, str] = {}
    ranks: dict[str, int] = {}
    for memory_id, content, importance, _, source in rows:
        ranks[source] = ranks.get(source, 0) + 1
        scores[memory_id] = scores.get(memory_id, 0.1 * importance) + 1 / (60 + ranks[source])
        contents[memory_id] = content
    best = sorted(scores, key=lambda m: (-scores[m], m))[:limit]
    return [contents[m] for m in best]


def load_raw(data: PeerData, ext: str) -> None:
    """Create the floors' tables in their schema and load the same rows."""
    with psycopg.connect(libpq(data.url, SCHEMAS["raw_sql_floor"], ext)) as conn:
        conn.execute(RAW_SCHEMA_SQL.format(dim=int(data.dim)).encode())
        at = datetime.now(UTC) - timedelta(days=1)
        rows: list[tuple[str, str | None, str | None, str]] = [
            ("server", data.server_id, None, t) for t in data.server_texts
        ]
        for user, texts in data.personal.items():
            rows += [("personal", None, user, t) for t in texts]
        with conn.cursor() as cur:
            for start in range(0, len(rows), 1000):
                chunk = rows[start : start + 1000]
                vectors = data.embeddings.embed_documents([r[3] for r in chunk])
                cur.executemany(
                    "INSERT INTO memories (scope, server_id, user_id, content, embedding,"
                    " created_at) VALUES (%s, %s, %s, %s, %s::halfvec, %s)",
                    [
                        (*r, vector_text(v), at + timedelta(microseconds=start + k))
                        for k, (r, v) in enumerate(zip(chunk, vectors, strict=True))
                    ],
                )
            cur.execute(
                "INSERT INTO settings (server_id) VALUES (%s) ON CONFLICT DO NOTHING",
                (data.server_id,),
            )
            stm_rows = [
                ("server", data.server_id, f"channel-{c}", json.dumps(seed_messages(f"c{c}")))
                for c in range(data.channels)
            ]
            current = json.dumps(seed_messages("current"))
            stm_rows += [
                ("server", data.server_id, "current", current),
                ("user", data.speaker, "current", current),
            ]
            cur.executemany(
                "INSERT INTO stm (kind, owner, channel, messages) VALUES (%s, %s, %s, %s::jsonb)",
                stm_rows,
            )
        largest = max([len(data.server_texts), *map(len, data.personal.values())])
        if largest > EXACT_MAX_ROWS:
            conn.execute(
                "CREATE INDEX IF NOT EXISTS memories_hnsw ON memories"
                " USING hnsw (embedding halfvec_cosine_ops)"
            )
        conn.commit()
        conn.autocommit = True
        for table in ("memories", "settings", "stm"):
            conn.execute(f"VACUUM ANALYZE {table}".encode())


def build_raw(
    peers: Peers, data: PeerData, conn_url: str, ext: str, load: bool, *, same_work: bool
) -> None:
    """Hand-written SQL: one pipelined read transaction and one pipelined write transaction.

    With ``same_work``, the reads are kioku's turn's (settings, both hybrid rankings);
    without, the server's 10 nearest by vector are its only retrieval.
    """
    name = "raw_sql_floor" if same_work else "raw_sql_vector_floor"
    if load and not peers.raw_loaded:
        load_raw(data, ext)
        peers.raw_loaded = True
    # Transactions are explicit BEGIN ... COMMIT inside each pipeline: psycopg's implicit
    # transactions (autocommit off) cost two extra round trips per pipeline.
    conn = peers.resources.enter_context(
        psycopg.connect(libpq(conn_url, SCHEMAS[name], ext), autocommit=True)
    )
    conn.execute("SET hnsw.iterative_scan = relaxed_order")  # once per connection
    updatable = [
        int(r[0])
        for r in conn.execute(
            "SELECT id FROM memories WHERE scope = 'personal' AND user_id = %s"
            " ORDER BY id LIMIT %s",
            (data.speaker, UPDATABLE),
        )
    ]
    embeddings = precomputed(data)
    questions = {q: vector_text(embeddings.embed_query(q)) for q in data.questions}
    updates = {
        t: vector_text(embeddings.embed_query(t))
        for t in dict.fromkeys(update_text(data.speaker, i) for i in range(97 * 13))
    }
    prompt, people = Prompt(), list(data.personal)

    def read(question: str) -> tuple[list[tuple[str, Sequence[str]]], int]:
        """The prompt's sections, and how many memories they hold."""
        with conn.pipeline():
            conn.execute("BEGIN")
            settings = conn.execute(RAW_SETTINGS, (data.server_id,)) if same_work else None
            server = conn.execute(RAW_SERVER, (data.server_id, WINDOW))
            personal = conn.execute(RAW_PERSONAL, (people, WINDOW))
            if same_work:
                ranking = {
                    "vector": questions[question],
                    "words": any_word(question),
                    "pool": 2 * RANKED,
                    "owner": data.server_id,
                    "owners": people,
                }
                relevant = conn.execute(RAW_RANK_SERVER, ranking)
                personal_relevant = conn.execute(RAW_RANK_PERSONAL, ranking)
            else:
                relevant = conn.execute(RAW_RELEVANT, (data.server_id, questions[question]))
            channel = conn.execute(RAW_CHANNEL, (data.server_id, "current"))
            others = conn.execute(RAW_OTHERS, (data.server_id, "current", OTHER_CHANNELS_READ))
            conn.execute("COMMIT")
        by_user: dict[str, list[str]] = {u: [] for u in people}
        for user, content in personal.fetchall():
            by_user[user].append(content)
        if same_work:
            assert settings is not None
            personal_on = bool(settings.fetchone()[0])  # type: ignore[index]
            relevant_rows = fused(relevant.fetchall(), RANKED)
            shown = {c for texts in by_user.values() for c in texts}
            personal_rows = (
                [c for c in fused(personal_relevant.fetchall(), RANKED) if c not in shown]
                if personal_on
                else []
            )
        else:
            relevant_rows, personal_rows = [r[0] for r in relevant.fetchall()], []
        server_rows = [r[0] for r in server.fetchall()]
        sections: list[tuple[str, Sequence[str]]] = [
            ("Server memories", list(dict.fromkeys(relevant_rows + server_rows)))
        ]
        if personal_rows:
            sections.append(("Also about the people here", personal_rows))
        sections += [(f"About {u}", by_user[u]) for u in people]
        current = channel.fetchone()
        found = sum(len(items) for _, items in sections)
        sections.append(("This channel", [m["text"] for m in current[0]] if current else []))
        sections += [(f"In {c}", [m["text"] for m in msgs]) for c, msgs, _ in others.fetchall()]
        return sections, found

    def turn(i: int) -> None:
        question = data.questions[i % len(data.questions)]
        sections, peers.found[name] = read(question)
        prompt.render(sections)
        content = update_text(data.speaker, i)
        memory_id = updatable[i % len(updatable)]
        new = json.dumps([stm_message("user", question), stm_message("assistant", REPLY)])
        tool: list[tuple[str, tuple[Any, ...]]] = [
            (RAW_HISTORY, (content, memory_id)),
            (RAW_UPDATE, (content, updates[content], memory_id)),
        ]
        capture: list[tuple[str, tuple[Any, ...]]] = [
            (RAW_STM_UPSERT, ("server", data.server_id, "current", new, KEEP_MESSAGES)),
            (RAW_STM_UPSERT, ("user", data.speaker, "current", new, KEEP_MESSAGES)),
        ]
        # The same work: the tool's write is committed, its answer back, before the model
        # replies, and the capture saves that reply (two transactions, as every other
        # contender's turn has). The vector floor wrote both in one.
        for statements in [tool, capture] if same_work else [tool + capture]:
            with conn.pipeline():
                conn.execute("BEGIN")
                for sql, args in statements:
                    conn.execute(sql, args)
                conn.execute("COMMIT")

    peers.turns[name] = turn


# --- building and measuring -----------------------------------------------------------------


def build_peers(
    data: PeerData,
    *,
    which: Sequence[str] = PEERS,
    connect_url: str | None = None,
    load: bool = True,
) -> Peers:
    """Load ``data`` into each peer in ``which`` and open its connections.

    Args:
        data: The memories, questions and speaker.
        which: Peers to build (names from ``PEERS``).
        connect_url: SQLAlchemy URL the turns' connections use instead of ``data.url``
            (e.g. a ``RoundTripProxy``'s, to count round trips); loading uses ``data.url``.
        load: Load the data (``False`` when an earlier build on this database did).

    Returns:
        The peers; one that cannot be built is in ``skipped`` with the reason.
    """
    unknown = set(which) - set(PEERS)
    if unknown:
        raise ValueError(f"unknown peers: {sorted(unknown)}")
    ext = prepare_database(data.url, [*SCHEMAS.values(), STM_SCHEMA])
    conn = connect_url or data.url
    peers = Peers()
    builders: dict[str, Callable[[], None]] = {
        "postgres_store_flat": lambda: build_store_peer(
            peers, data, "postgres_store_flat", "flat", conn, ext, load
        ),
        "postgres_store_hnsw": lambda: build_store_peer(
            peers, data, "postgres_store_hnsw", "hnsw", conn, ext, load
        ),
        "langmem": lambda: build_langmem(peers, data, conn, ext, load),
        "mem0": lambda: build_mem0(peers, data, conn, ext, load),
        "raw_sql_floor": lambda: build_raw(peers, data, conn, ext, load, same_work=True),
        "raw_sql_vector_floor": lambda: build_raw(peers, data, conn, ext, load, same_work=False),
    }
    try:
        for name in PEERS:
            if name not in which:
                continue
            try:
                builders[name]()
            except ImportError as exc:
                peers.skipped[name] = f"not installed ({exc}); pip install -e '.[bench]'"
    except BaseException:
        peers.close()
        raise
    return peers


def count_round_trips(peers: Peers, reset: Callable[[], int], turns: int = 3) -> dict[str, int]:
    """Round trips of one turn of each peer, after ``turns`` warm-up turns.

    ``peers`` must have been built with ``connect_url`` a ``RoundTripProxy``'s URL and
    ``reset`` that proxy's ``reset``. Background work (mem0's pool, LangGraph's async
    checkpoint writes) finishes inside the turn, so it is counted with it.
    """
    counts: dict[str, int] = {}
    for name, turn in peers.turns.items():
        for i in range(turns):
            turn(10_000 + i)
        reset()
        turn(10_000 + turns)
        counts[name] = reset()
    return counts


def numbered(turn: Callable[[int], None], step: Iterator[int]) -> Callable[[], object]:
    """``turn`` called with the next number of ``step`` (shared, so peers ask alike)."""
    return lambda: turn(next(step))


def measure(
    data: PeerData, which: Sequence[str] = PEERS, turns: int = 100, *, round_trips: bool = True
) -> dict[str, Any]:
    """p50/p95 (ms) of each peer's turn in alternating rounds, and its round trips per turn.

    Returns:
        ``{"peers": {name: {"p50_ms", "p95_ms", "round_trips", "found"}}, "skipped": {...}}``.
    """
    from bench.roundtrips import RoundTripProxy

    report: dict[str, Any] = {"peers": {}, "skipped": {}}
    peers = build_peers(data, which=which)
    try:
        report["skipped"] = dict(peers.skipped)
        step = iter(range(10**9))
        contenders = {name: numbered(turn, step) for name, turn in peers.turns.items()}
        rounds = Rounds.of_turns(contenders, turns)
        for name in peers.turns:
            report["peers"][name] = {
                "p50_ms": rounds.p50(name),
                "p95_ms": rounds.p95(name),
                "found": peers.found.get(name),
            }
    finally:
        peers.close()
    if round_trips and report["peers"]:
        proxy = RoundTripProxy(data.url)
        counted = build_peers(data, which=list(report["peers"]), connect_url=proxy.url, load=False)
        try:
            for name, count in count_round_trips(counted, proxy.reset).items():
                report["peers"][name]["round_trips"] = count
        finally:
            counted.close()
            proxy.close()
    return report


def synthetic_data(url: str, server_memories: int, personal: int = 100) -> PeerData:
    """Generated sentences, hashing vectors behind a lookup: bench/turn.py's scenario."""
    from bench.search import DIM, Lookup, sentences
    from kioku._embeddings import HashingEmbeddings

    participants = [f"user-{i}" for i in range(5)]
    texts = sentences(server_memories + personal * len(participants))
    server, rest = texts[:server_memories], texts[server_memories:]
    questions = [
        "what tea does the shop serve on fridays?",
        "remind me what User 1 likes to cook",
        "do you remember the hiking plans?",
        "which books were recommended last week?",
    ]
    hashing = HashingEmbeddings(DIM)
    vectors = dict(zip(texts + questions, hashing.embed_documents(texts + questions), strict=True))
    return PeerData(
        url=url,
        dim=DIM,
        embeddings=Lookup(vectors, hashing),
        server_id="bench-server",
        server_texts=server,
        personal={u: rest[k :: len(participants)] for k, u in enumerate(participants)},
        questions=questions,
        speaker=participants[0],
    )


def main() -> None:
    """Build synthetic data in a fresh database, time the chosen peers, print the table."""
    from bench.common import bench_database

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--which", nargs="+", default=list(PEERS), choices=PEERS)
    parser.add_argument("--server-memories", type=int, default=100)
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--no-round-trips", action="store_true")
    args = parser.parse_args()
    with bench_database(f"kioku_bench_peers_{args.server_memories}") as url:
        data = synthetic_data(url, args.server_memories)
        report = measure(data, args.which, args.turns, round_trips=not args.no_round_trips)
    print(f"{args.server_memories:,} server memories, 5 x 100 personal, {args.turns} turns")
    print(f"{'peer':<22}{'p50 ms':>9}{'p95 ms':>9}{'round trips':>13}{'found':>7}")
    for name, r in report["peers"].items():
        print(
            f"{name:<22}{r['p50_ms']:>9.2f}{r['p95_ms']:>9.2f}"
            f"{r.get('round_trips', '-')!s:>13}{r['found']!s:>7}"
        )
    for name, reason in report["skipped"].items():
        print(f"{name:<22}skipped: {reason}")


if __name__ == "__main__":
    main()
