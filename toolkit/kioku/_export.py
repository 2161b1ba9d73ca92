"""A person's data as JSON: the access request that pairs with erasure (``kioku export``).

What it gathers is what :mod:`kioku._erasure` removes for the same person, found by the
same definitions: their personal memories in every lineage and the server-wide ones kioku
saved about them as a bridged user, the history rows of those memories, their directory
row and memberships, the LangGraph store items whose memories those are (namespace, key,
whole JSON value), their own short-term memory entries, their messages (and the bot's
replies to them) in other entries and in the conversation threads.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from sqlalchemy import RowMapping, select, text
from sqlalchemy.orm import Session

from kioku._conversations import conversation_threads, person_thread_messages
from kioku._db.models import Memory, MemoryHistory
from kioku._deps import KiokuDeps
from kioku._erasure import PERSON_HISTORY, PERSON_ITEMS, PERSON_MEMORIES, name_keys
from kioku._inspection import HistoryRow, StoredMemory
from kioku._stm.model import belongs_to
from kioku._stm.registry import StmRegistry

_DIRECTORY = text(
    "SELECT id, display_name, global_name, username, aliases, privacy_level "
    "FROM users WHERE id = :u"
)
_MEMBERSHIPS = text("SELECT server_id, nickname FROM server_members WHERE user_id = :u")
_STORE_ITEMS = text(
    "SELECT namespace, key, value, memory_id, created_at, updated_at FROM langgraph_items "
    f"WHERE {PERSON_ITEMS} ORDER BY namespace, key"
)


def export_person(
    deps: KiokuDeps, checkpointer: BaseCheckpointSaver[Any], user_id: str
) -> dict[str, Any]:
    """Everything kioku holds about ``user_id``, JSON-ready (module docstring)."""
    with deps.reads() as session:
        names = name_keys(session, user_id)
        export: dict[str, Any] = {
            "user_id": user_id,
            "exported_at": datetime.now(UTC).isoformat(),
            **_directory(session, user_id),
            **_memories(session, user_id),
        }
    export["short_term_memory"] = _short_term(deps, user_id, names)
    threads = conversation_threads(deps.engine)
    found = person_thread_messages(checkpointer, threads, user_id, names)
    export["conversations"] = {
        thread: [{"type": m.type, "id": m.id, "text": m.text} for m in messages]
        for thread, messages in found.items()
    }
    return export


def _directory(session: Session, user_id: str) -> dict[str, Any]:
    row = session.execute(_DIRECTORY, {"u": user_id}).mappings().first()
    memberships = session.execute(_MEMBERSHIPS, {"u": user_id}).mappings()
    return {
        "directory": dict(row) if row is not None else None,
        "memberships": [dict(m) for m in memberships],
    }


def _memories(session: Session, user_id: str) -> dict[str, Any]:
    memories = session.scalars(
        select(Memory).where(text(PERSON_MEMORIES)).params(u=user_id).order_by(Memory.id)
    )
    history = session.scalars(
        select(MemoryHistory)
        .where(text(PERSON_HISTORY))
        .params(u=user_id)
        .order_by(MemoryHistory.created_at, MemoryHistory.id)
    )
    items = session.execute(_STORE_ITEMS, {"u": user_id}).mappings()
    return {
        "memories": [StoredMemory.of(row).to_dict() for row in memories],
        "memory_history": [HistoryRow.of(row).to_dict() for row in history],
        "langgraph_store_items": [_item(item) for item in items],
    }


def _item(row: RowMapping) -> dict[str, Any]:
    """A LangGraph store item, JSON-ready: its address, value, memory and times."""
    return {
        "namespace": list(row["namespace"]),
        "key": row["key"],
        "value": row["value"],
        "memory_id": row["memory_id"],
        "created_at": row["created_at"].isoformat(),
        "updated_at": row["updated_at"].isoformat(),
    }


def _short_term(deps: KiokuDeps, user_id: str, names: frozenset[str]) -> dict[str, Any]:
    """Their own entries whole; in others, their messages and the replies to them."""
    with deps.reads() as session:
        registry = StmRegistry(session)
        entries = registry.stored([candidate.key for candidate in registry.entries()])
    own: list[dict[str, Any]] = []
    elsewhere: list[dict[str, Any]] = []
    for thread_id, entry in entries.items():
        if entry.key.kind == "user" and entry.key.owner_id == user_id:
            own.append({"entry": thread_id, **entry.to_state()})
            continue
        theirs = [m.to_dict() for m in entry.messages if belongs_to(m, user_id, names)]
        if theirs:
            elsewhere.append({"entry": thread_id, "messages": theirs})
    return {"own_entries": own, "messages_in_other_entries": elsewhere}
