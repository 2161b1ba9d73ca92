"""The PostgresStore peers and LangMem's tools over a PostgresStore (:mod:`bench.peers`).

``postgres_store_flat`` and ``postgres_store_hnsw``: one ``store.batch`` of reads and one of
writes per turn; ``langmem``: LangMem's search and manage tools, then the short-term memory
graph of :mod:`bench.peer_data`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.store.base import GetOp, Item, Op, PutOp, SearchOp
from langgraph.store.postgres import PostgresStore
from langgraph.store.postgres.base import PostgresIndexConfig

from bench.common import analyze_store, libpq
from bench.peer_data import (
    KEEP_MESSAGES,
    OTHER_CHANNELS_READ,
    REPLY,
    SCHEMAS,
    UPDATABLE,
    PeerData,
    Peers,
    Prompt,
    memory_key,
    open_stm,
    precomputed,
    seed_messages,
    stm_graph,
    stm_message,
    update_text,
)


def store_index(dim: int, kind: str, embeddings: Embeddings, fld: str) -> PostgresIndexConfig:
    """PostgresStore's index config: halfvec, ``kind`` (flat or hnsw), cosine, one field."""
    return {
        "dims": dim,
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
    index = store_index(data.dim, kind, embeddings, "text")
    if load:
        with open_store(libpq(data.url, SCHEMAS[name], ext), index) as loader:
            load_store(loader, data, "text", stm=True)
        analyze_store(libpq(data.url, SCHEMAS[name], ext))
    store = peers.resources.enter_context(open_store(libpq(conn, SCHEMAS[name], ext), index))
    peers.turns[name] = store_turn(store, data, Prompt(), peers.found, name)


def build_langmem(peers: Peers, data: PeerData, conn: str, ext: str, load: bool) -> None:
    """LangMem's search and manage tools over a flat halfvec PostgresStore, + PostgresSaver."""
    from langmem import create_manage_memory_tool, create_search_memory_tool

    embeddings = precomputed(data)
    index = store_index(data.dim, "flat", embeddings, "content")
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
