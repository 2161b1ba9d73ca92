"""Async turns run concurrently: a slow embedder in one turn never holds up the others.

N turns awaited together take about as long as one (not N times as long), and the event
loop keeps ticking meanwhile: the graph's and the middleware's database work, the tools'
flows and the embedder run off the loop. Ratios with a wide margin, not tight timings.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.embeddings import Embeddings
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from kioku import (
    DirectoryMember,
    KiokuMemoryMiddleware,
    KiokuStore,
    MemoryNotice,
    TurnContext,
    arun_tool_call,
    build_graph,
    memory_tools,
    run_tool_call,
)
from kioku._embeddings import EmbedderSpec, HashingEmbeddings
from kioku.testing import Script, ScriptedChatModel, call_tool, say
from tests.helpers import make_world

EMBED_SECONDS = 1.0
TURNS = 4


class SlowEmbeddings(Embeddings):
    """The hashing embedder behind a blocking second per call (like a remote one)."""

    def __init__(self) -> None:
        self.inner = HashingEmbeddings(384)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        time.sleep(EMBED_SECONDS)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        time.sleep(EMBED_SECONDS)
        return self.inner.embed_query(text)


def remember_then_confirm(prompt: Sequence[BaseMessage], offered: tuple[str, ...]) -> AIMessage:
    """Save what the user said (one embedding), then confirm: the same for every turn."""
    if isinstance(prompt[-1], ToolMessage):
        return say(json.loads(str(prompt[-1].content))["status"])
    said = next(m.text for m in reversed(prompt) if isinstance(m, HumanMessage))
    return call_tool("create_long_term_memory", memory_content=said, memory_scope="server_wide")


def _app(store: KiokuStore, runner: str) -> Any:
    model = ScriptedChatModel(script=Script(fallback=remember_then_confirm))
    if runner == "graph":
        return build_graph(
            model, store, checkpointer=InMemorySaver(), stm=store.short_term_memory()
        )
    return create_agent(
        model,
        tools=memory_tools(store),
        middleware=[KiokuMemoryMiddleware(store)],
        context_schema=TurnContext,
        checkpointer=InMemorySaver(),
    )


async def _turn(app: Any, number: int) -> str:
    thread = f"t{number}"
    state = await app.ainvoke(
        {"messages": [HumanMessage(f"fact number {number} is worth keeping")]},
        {"configurable": {"thread_id": thread}},
        context=TurnContext.for_user(f"user-{number}", thread_id=thread),
    )
    return str(state["messages"][-1].content)


async def _timed(app: Any, numbers: range) -> tuple[float, float, list[str]]:
    """Wall time of the turns run together, and the longest pause of the event loop."""
    gaps: list[float] = []
    done = asyncio.Event()

    async def heartbeat() -> None:
        last = time.monotonic()
        while not done.is_set():
            await asyncio.sleep(0.05)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    ticking = asyncio.create_task(heartbeat())
    start = time.monotonic()
    replies = await asyncio.gather(*(_turn(app, n) for n in numbers))
    elapsed = time.monotonic() - start
    done.set()
    await ticking
    return elapsed, max(gaps, default=0.0), list(replies)


@pytest.mark.parametrize("runner", ["graph", "agent"])
def test_concurrent_async_turns_with_a_slow_embedder_take_about_as_long_as_one(
    store: KiokuStore, runner: str
) -> None:
    slow = KiokuStore(
        store.engine,
        settings=store.settings,
        embedder=EmbedderSpec(SlowEmbeddings(), store.embedder.model, store.embedder.dimension),
    )
    try:
        app = _app(slow, runner)
        one, one_gap, [reply] = asyncio.run(_timed(app, range(1)))
        assert reply == "memory_saved_successfully"
        assert one >= EMBED_SECONDS
        many, many_gap, replies = asyncio.run(_timed(app, range(1, TURNS + 1)))
        assert replies == ["memory_saved_successfully"] * TURNS
        # Run one after another, the turns would take TURNS times as long.
        assert many < one * (TURNS / 2), (one, many)
        # The loop never waited on the embedder (a blocked loop pauses a whole second).
        assert max(one_gap, many_gap) < EMBED_SECONDS / 2, (one_gap, many_gap)
    finally:
        slow.close()


class AsyncDirectory:
    """A member list behind an async API (the application's own client)."""

    def __init__(self) -> None:
        self.loops: list[asyncio.AbstractEventLoop] = []

    async def find_members(self, server_id: str, name_key: str) -> list[DirectoryMember]:
        await asyncio.sleep(0)
        self.loops.append(asyncio.get_running_loop())
        return [DirectoryMember("u-zed", "Zed")] if name_key == "zed" else []


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_async_notifiers_and_directories_are_awaited(store: KiokuStore, mode: str) -> None:
    directory = AsyncDirectory()
    with_directory = KiokuStore(store.engine, settings=store.settings, directory=directory)
    world = make_world(with_directory)
    notified: list[tuple[int | None, asyncio.AbstractEventLoop]] = []

    async def notifier(notice: MemoryNotice) -> None:
        await asyncio.sleep(0)
        notified.append((notice.memory_id, asyncio.get_running_loop()))

    tools = memory_tools(with_directory)
    context = world.context(notifier=notifier)
    about_zed = {
        "memory_content": "{user} bakes bread",
        "memory_scope": "target_user",
        "target_user": "Zed",
    }
    saved = {"memory_content": "The shop opens at nine", "memory_scope": "server_wide"}

    async def both() -> tuple[Any, Any, asyncio.AbstractEventLoop]:
        zed = await arun_tool_call(tools, "create_long_term_memory", about_zed, context)
        made = await arun_tool_call(tools, "create_long_term_memory", saved, context)
        return zed, made, asyncio.get_running_loop()

    try:
        if mode == "async":
            zed, made, loop = asyncio.run(both())
            assert directory.loops == [loop] and notified[0][1] is loop  # the caller's loop
        else:
            zed = run_tool_call(tools, "create_long_term_memory", about_zed, context)
            made = run_tool_call(tools, "create_long_term_memory", saved, context)
        # Zed was found in the directory (not a participant, so no personal memory).
        assert "Zed is not taking part" in json.loads(str(zed.message.content))["reason"]
        result = json.loads(str(made.message.content))
        assert result["status"] == "memory_saved_successfully"
        assert [memory_id for memory_id, _ in notified] == [result["memory_id"]]
    finally:
        with_directory.close()


class CountingEmbeddings(Embeddings):
    """Counts which API kioku uses: the sync one, or the awaited one."""

    def __init__(self) -> None:
        self.inner = HashingEmbeddings(384)
        self.calls: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls.append("sync")
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        self.calls.append("sync")
        return self.inner.embed_query(text)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        await asyncio.sleep(0)
        self.calls.append("async")
        return self.inner.embed_documents(texts)

    async def aembed_query(self, text: str) -> list[float]:
        await asyncio.sleep(0)
        self.calls.append("async")
        return self.inner.embed_query(text)


@pytest.mark.parametrize("runner", ["graph", "agent"])
def test_async_turns_await_the_embedder(store: KiokuStore, runner: str) -> None:
    counting = CountingEmbeddings()
    spec = EmbedderSpec(counting, store.embedder.model, store.embedder.dimension)
    embedded = KiokuStore(store.engine, settings=store.settings, embedder=spec)
    try:
        app = _app(embedded, runner)
        assert asyncio.run(_turn(app, 1)) == "memory_saved_successfully"
        assert counting.calls and set(counting.calls) == {"async"}
        counting.calls.clear()
        state = app.invoke(
            {"messages": [HumanMessage("fact number 2 is worth keeping too")]},
            {"configurable": {"thread_id": "t2"}},
            context=TurnContext.for_user("user-2", thread_id="t2"),
        )
        assert state["messages"][-1].content == "memory_saved_successfully"
        assert counting.calls and set(counting.calls) == {"sync"}
    finally:
        embedded.close()
