"""LangGraph's ``PostgresSaver``, usable from async graphs and agents too.

``PostgresSaver`` is sync only: ``await graph.ainvoke(...)`` with it raises
``NotImplementedError``. This saver runs the same methods in a worker thread when awaited,
on the same connection pool, so one checkpointer (``KiokuStore.checkpointer()``) serves
sync and async code alike.

It also holds work a run hands it (:meth:`PostgresSaverForBoth.hold`): the run's next
checkpoint is saved only once that work is done, so the run, which waits for its
checkpoints, ends after it. The capture of a turn into short-term memory runs that way,
beside the agent's last checkpoint rather than before it.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Sequence
from concurrent.futures import Future, wait
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.postgres import PostgresSaver


class PostgresSaverForBoth(PostgresSaver):
    """``PostgresSaver`` whose async methods run its sync ones off the event loop."""

    MAX_SERVED = 10_000
    """Threads remembered as loaded by this saver (the oldest forgotten first)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """As ``PostgresSaver``'s."""
        super().__init__(*args, **kwargs)
        self._lock = threading.Lock()
        self._served: OrderedDict[str, None] = OrderedDict()
        self._held: dict[str, list[Future[Any]]] = {}

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """``PostgresSaver.get_tuple``; a run starts with it, so its thread is noted."""
        found = super().get_tuple(config)
        thread_id = config["configurable"].get("thread_id")
        if thread_id is not None:
            with self._lock:
                self._served[str(thread_id)] = None
                self._served.move_to_end(str(thread_id))
                while len(self._served) > self.MAX_SERVED:
                    self._served.popitem(last=False)
        return found

    def serves(self, thread_id: str) -> bool:
        """Whether a run of ``thread_id`` loaded its checkpoint from this saver."""
        with self._lock:
            return thread_id in self._served

    def hold(self, thread_id: str, work: Future[Any]) -> None:
        """Save ``thread_id``'s next checkpoint only once ``work`` is done.

        For a run of a thread this saver :meth:`serves`: the run ends after ``work``.
        """
        with self._lock:
            self._held.setdefault(thread_id, []).append(work)

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """``PostgresSaver.put``, returning once the work held for the thread is done."""
        saved = super().put(config, checkpoint, metadata, new_versions)
        with self._lock:
            held = self._held.pop(str(config["configurable"]["thread_id"]), [])
        wait(held)  # its outcome is the work's own to report
        return saved

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
