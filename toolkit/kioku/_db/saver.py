"""LangGraph's ``PostgresSaver``, usable from async graphs and agents too, and read fast.

``PostgresSaver`` is sync only: ``await graph.ainvoke(...)`` with it raises
``NotImplementedError``. This saver runs the same methods in a worker thread when awaited,
on the same connection pool, so one checkpointer (``KiokuStore.checkpointer()``) serves
sync and async code alike.

It also reads a checkpoint's channel values by their primary key (:data:`SELECT_SQL`):
``PostgresSaver``'s statement joins the checkpoint's channel versions with every blob of
the thread, which PostgreSQL runs as a hash of all of them, so reading a thread's latest
checkpoint (once at the start of every turn) grew with the thread's history.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Sequence
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.serde.base import SerializerProtocol
from psycopg import Connection, Pipeline
from psycopg.rows import DictRow
from psycopg_pool import ConnectionPool

_BLOBS_JOINED = """
        from jsonb_each_text(checkpoint -> 'channel_versions')
        inner join checkpoint_blobs bl
            on bl.thread_id = checkpoints.thread_id
            and bl.checkpoint_ns = checkpoints.checkpoint_ns
            and bl.channel = jsonb_each_text.key
            and bl.version = jsonb_each_text.value
"""
"""How ``PostgresSaver.SELECT_SQL`` finds a checkpoint's blobs: a join the planner makes
a hash join over all of the thread's blobs, so it grows with them
(``python -m bench.checkpoint_reads``)."""
_BLOBS_LOOKED_UP = """
        from jsonb_each_text(checkpoint -> 'channel_versions') as versions
        cross join lateral (
            select blobs.channel, blobs.type, blobs.blob
            from checkpoint_blobs blobs
            where blobs.thread_id = checkpoints.thread_id
                and blobs.checkpoint_ns = checkpoints.checkpoint_ns
                and blobs.channel = versions.key
                and blobs.version = versions.value
            limit 1
        ) as bl
"""
"""The same rows, each looked up by the primary key, whatever the history. ``limit 1`` (at
most one row matches the key anyway) keeps the planner from flattening the lookup back
into the join."""

SELECT_SQL = PostgresSaver.SELECT_SQL.replace(_BLOBS_JOINED, _BLOBS_LOOKED_UP)
"""``PostgresSaver.SELECT_SQL`` with each blob looked up by its key (when that statement
still holds the join this replaces; ``tests/test_checkpoint_reads.py`` checks it does)."""


class PostgresSaverForBoth(PostgresSaver):
    """``PostgresSaver`` whose async methods run its sync ones off the event loop.

    On a connection pool, its calls run side by side, as many as the pool holds:
    ``PostgresSaver`` holds one lock around every call, which a single shared connection
    needs, but on a pool each call takes a connection of its own, and the lock only queued
    every checkpoint write of the process behind the one before (langgraph issue #7259).
    Prunes still run one at a time: two REPEATABLE READ prunes of one thread would fail
    against each other's deletes. Checkpoints are read with :data:`SELECT_SQL`.
    """

    SELECT_SQL = SELECT_SQL

    def __init__(
        self,
        conn: Connection[DictRow] | ConnectionPool[Any],
        pipe: Pipeline | None = None,
        serde: SerializerProtocol | None = None,
    ) -> None:
        """As ``PostgresSaver``'s."""
        super().__init__(conn, pipe, serde)
        self._prune_lock = threading.Lock()
        if isinstance(conn, ConnectionPool) and pipe is None:
            # A wait as before when every connection is busy, not the pool's timeout.
            self.lock = cast(threading.Lock, threading.BoundedSemaphore(conn.max_size))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """``PostgresSaver.prune``, one at a time in this process (see the class)."""
        with self._prune_lock:
            super().prune(thread_ids, strategy=strategy)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """:meth:`get_tuple` in a worker thread."""
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """:meth:`list` in a worker thread (read whole, then yielded)."""
        found = await asyncio.to_thread(
            lambda: list(self.list(config, filter=filter, before=before, limit=limit))
        )
        for item in found:
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """:meth:`put` in a worker thread."""
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """:meth:`put_writes` in a worker thread."""
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        """:meth:`delete_thread` in a worker thread."""
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """:meth:`prune` in a worker thread."""
        await asyncio.to_thread(self.prune, thread_ids, strategy=strategy)
