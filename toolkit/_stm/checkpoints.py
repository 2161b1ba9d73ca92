"""Short-term-memory entries as LangGraph checkpoints: one checkpoint per entry version.

An entry's thread holds checkpoints whose channel values are the entry's state
(:meth:`StmEntry.to_state`). Entries are read with the checkpointer's ``get_tuple`` and
written with its ``put``; with ``PostgresSaver`` the same two upserts ``put`` runs are
instead queued into the caller's pipeline (:func:`postgres_writes`), so a write of two
entries and their registry rows costs one round trip.
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    Checkpoint,
    CheckpointMetadata,
    empty_checkpoint,
    get_serializable_checkpoint_metadata,
)
from langgraph.checkpoint.postgres import PostgresSaver
from psycopg.types.json import Jsonb

from kioku._stm.model import StmEntry, StmKey

_METADATA: CheckpointMetadata = {"source": "update", "step": -1, "parents": {}}


def entry_config(key: StmKey) -> RunnableConfig:
    """The checkpointer config of ``key``'s thread."""
    return {"configurable": {"thread_id": key.thread_id, "checkpoint_ns": ""}}


def entry_checkpoint(entry: StmEntry) -> Checkpoint:
    """A new checkpoint holding ``entry``; every channel versioned by the checkpoint id."""
    checkpoint = empty_checkpoint()
    state = entry.to_state()
    checkpoint["channel_values"] = state
    checkpoint["channel_versions"] = {channel: checkpoint["id"] for channel in state}
    return checkpoint


def read_entry(saver: BaseCheckpointSaver[Any], key: StmKey) -> StmEntry | None:
    """The entry's latest version (``None``: no entry)."""
    stored = saver.get_tuple(entry_config(key))
    if stored is None:
        return None
    return StmEntry.from_state(key, dict(stored.checkpoint["channel_values"]))


def put_entry(saver: BaseCheckpointSaver[Any], entry: StmEntry) -> None:
    """Store ``entry`` through any checkpointer."""
    checkpoint = entry_checkpoint(entry)
    saver.put(
        entry_config(entry.key),
        checkpoint,
        _METADATA,
        dict(checkpoint["channel_versions"]),
    )


def postgres_writes(saver: PostgresSaver, entry: StmEntry) -> list[tuple[str, Any, bool]]:
    """``PostgresSaver.put``'s statements for ``entry``: ``(sql, params, many)``.

    Scalars stay inline in the checkpoint row, other values go to blobs, as ``put``
    stores them, so ``get_tuple`` reads the entry back.
    """
    checkpoint = entry_checkpoint(entry)
    thread = entry.key.thread_id
    values = checkpoint["channel_values"]
    inline = {
        k: v for k, v in values.items() if v is None or isinstance(v, str | int | float | bool)
    }
    blobs = [
        (thread, "", channel, checkpoint["channel_versions"][channel], *saver.serde.dumps_typed(v))
        for channel, v in values.items()
        if channel not in inline
    ]
    row = {**checkpoint, "channel_values": inline}
    metadata = get_serializable_checkpoint_metadata(entry_config(entry.key), _METADATA)
    return [
        (saver.UPSERT_CHECKPOINT_BLOBS_SQL, blobs, True),
        (
            saver.UPSERT_CHECKPOINTS_SQL,
            (thread, "", checkpoint["id"], None, Jsonb(row), Jsonb(metadata)),
            False,
        ),
    ]
