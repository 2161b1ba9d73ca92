"""Mem0 OSS on pgvector in the same database, as a peer (:mod:`bench.peers`).

Searches before the turn's reply and ``Memory.update`` for the tool, then the short-term
memory graph of :mod:`bench.peer_data`; :mod:`bench.agent_peers` reuses its loading.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
from langchain_core.embeddings import Embeddings
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig

from bench.common import libpq
from bench.peer_data import (
    MEM0_COLLECTION,
    UPDATABLE,
    PeerData,
    Peers,
    Prompt,
    memory_key,
    open_stm,
    precomputed,
    stm_graph,
    update_text,
)


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
