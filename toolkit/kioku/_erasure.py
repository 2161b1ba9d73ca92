"""Forgetting a person or a server completely: ``store.erase_user``, ``erase_server``.

The ``kioku erase-user`` / ``erase-server`` commands run these too.

A person: every personal memory in every lineage, every server-wide memory kioku saved
about them as a bridged user (``memory_subjects``), the text of every history row of
those memories (a tombstone keeps who changed what, when and how), their messages and
the bot's replies to them in short-term memory and in the conversation threads, with
every older checkpoint version of what was rewritten, their memberships and their
directory row, and their own memory space of ``TurnContext.for_user`` as a server. A
server: its server-wide memories in every lineage and their history text, every
short-term memory entry of its channels, its members, personas and settings.

Other processes see the result at once: memory caches compare scope versions, and
short-term memory entries are re-read when their registry version changes.

A receipt counts what its run changed: a history row already scrubbed is not counted
again, so erasing the same person twice reports zeros the second time.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from langgraph.checkpoint.base import BaseCheckpointSaver
from sqlalchemy import text
from sqlalchemy.orm import Session

from kioku._context import server_key, user_space
from kioku._conversations import conversation_threads, forget_in_threads
from kioku._deps import KiokuDeps
from kioku._memory.text import normalise_name
from kioku._redaction import memory_fragments
from kioku._stm.store import ForgetReport, ShortTermMemory


@dataclass(frozen=True)
class ErasureReceipt:
    """What an erasure removed, counted per kind."""

    kind: Literal["user", "server"]
    subject_id: str
    memories_deleted: int = 0
    history_rows_scrubbed: int = 0
    memberships_removed: int = 0
    directory_rows_deleted: int = 0
    stm_entries_deleted: int = 0
    stm_entries_rewritten: int = 0
    stm_messages_removed: int = 0
    conversation_messages_removed: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form (what ``kioku erase-…`` prints)."""
        return asdict(self)


_USER_NAMES = text(
    "SELECT display_name, global_name, username, aliases FROM users WHERE id = :u "
    "UNION ALL SELECT nickname, NULL, NULL, NULL FROM server_members "
    "WHERE user_id = :u AND nickname IS NOT NULL"
)
_CONTENTS = text(
    "SELECT content FROM memories WHERE scope = :scope AND COALESCE(server_id, user_id) = :owner "
    "UNION SELECT unnest(ARRAY[old_content, new_content]) FROM memory_history "
    "WHERE scope = :scope AND owner_id = :owner"
)
_ABOUT = "SELECT memory_id FROM memory_subjects WHERE user_id = :u"
"""Server-wide memories saved about a bridged user (their rows outlive deleted memories)."""
_CONTENTS_ABOUT = text(
    f"SELECT content FROM memories WHERE id IN ({_ABOUT}) "
    "UNION SELECT unnest(ARRAY[old_content, new_content]) FROM memory_history "
    f"WHERE memory_id IN ({_ABOUT})"
)
_SCRUB = (
    "UPDATE memory_history SET old_content = NULL, new_content = NULL, "
    "erased_at = COALESCE(erased_at, now()) "
    "WHERE (old_content IS NOT NULL OR new_content IS NOT NULL) AND ({})"
)
PERSON_HISTORY = (
    "(scope = 'personal' AND owner_id = :u)"
    # rows older than owner tracking whose memory was already gone: the person's own
    # changes are the best account of what was theirs
    " OR (owner_id IS NULL AND actor_user_id = :u)"
    f" OR memory_id IN ({_ABOUT})"
)
"""The ``memory_history`` rows that are person ``:u``'s (what erasure scrubs, export shows)."""
PERSON_MEMORIES = f"(scope = 'personal' AND user_id = :u) OR id IN ({_ABOUT})"
"""The ``memories`` rows that are person ``:u``'s: personal ones in every lineage, and the
server-wide ones saved about them as a bridged user (what erasure deletes, export shows)."""
PERSON_ITEMS = f"memory_id IN (SELECT id FROM memories WHERE {PERSON_MEMORIES})"
"""The LangGraph store items (``langgraph_items``) that are person ``:u``'s: those whose
memory is theirs (erasure deletes them with their memories, export shows them)."""
_SCRUB_USER = _SCRUB.format(PERSON_HISTORY)
_SCRUB_SERVER = _SCRUB.format("scope = 'server' AND owner_id = :k")
_DELETE_USERS_MEMORIES = f"DELETE FROM memories WHERE {PERSON_MEMORIES}"


def _count(session: Session, sql: str, **params: Any) -> int:
    result = session.execute(text(sql), params)
    return int(getattr(result, "rowcount", 0))


def name_keys(session: Session, user_id: str) -> frozenset[str]:
    """The person's names, normalised: how messages from before authorship are matched."""
    keys: set[str] = set()
    for row in session.execute(_USER_NAMES, {"u": user_id}):
        for value in row:
            for name in value if isinstance(value, list) else [value]:
                if name:
                    keys.add(normalise_name(name))
    return frozenset(keys)


def _fragments(session: Session, scope: str, owner: str) -> frozenset[str]:
    """Fragments of every text the owner's memories ever had (live rows and history).

    A person's are those of their personal memories and of the server-wide ones saved
    about them as a bridged user.
    """
    rows = list(session.execute(_CONTENTS, {"scope": scope, "owner": owner}).scalars())
    if scope == "personal":
        rows += session.execute(_CONTENTS_ABOUT, {"u": owner}).scalars()
    return memory_fragments(content for content in rows if content)


def _scrub_chats(
    deps: KiokuDeps,
    checkpointer: BaseCheckpointSaver[Any],
    *,
    user_id: str | None,
    names: frozenset[str],
    fragments: frozenset[str],
    server_id: str | None = None,
) -> dict[str, int]:
    """Scrub short-term memory and conversation threads, before the rows go.

    A failure here leaves the names and texts to find them by for a retry. Returns the
    receipt's counts for the chats.
    """
    stm = ShortTermMemory(deps)
    dropped = stm.forget_server(server_id) if server_id is not None else ForgetReport()
    report = stm.forget(user_id, names, fragments)
    threads = conversation_threads(deps.engine)
    return {
        "stm_entries_deleted": dropped.entries_deleted + report.entries_deleted,
        "stm_entries_rewritten": report.entries_scrubbed,
        "stm_messages_removed": report.messages_removed,
        "conversation_messages_removed": forget_in_threads(
            checkpointer, threads, user_id=user_id, name_keys=names, fragments=fragments
        ),
    }


def erase_user(
    deps: KiokuDeps, checkpointer: BaseCheckpointSaver[Any], user_id: str
) -> ErasureReceipt:
    """Forget everything kioku holds about ``user_id``; see the module docstring.

    ``checkpointer`` holds the conversation threads to scrub.
    """
    with deps.sessions() as session:
        names = name_keys(session, user_id)
        fragments = _fragments(session, "personal", user_id)
    chats = _scrub_chats(deps, checkpointer, user_id=user_id, names=names, fragments=fragments)
    with deps.transaction() as session:
        rows = {
            "memories_deleted": _count(session, _DELETE_USERS_MEMORIES, u=user_id),
            "history_rows_scrubbed": _count(session, _SCRUB_USER, u=user_id),
            "memberships_removed": _count(
                session, "DELETE FROM server_members WHERE user_id = :u", u=user_id
            ),
            "directory_rows_deleted": _count(session, "DELETE FROM users WHERE id = :u", u=user_id),
        }
        _count(session, "DELETE FROM memory_subjects WHERE user_id = :u", u=user_id)
    # their own space (TurnContext.for_user)
    own = erase_server(deps, checkpointer, user_space(user_id))
    counts = {name: count + getattr(own, name) for name, count in {**rows, **chats}.items()}
    return ErasureReceipt("user", user_id, **counts)


def erase_server(
    deps: KiokuDeps, checkpointer: BaseCheckpointSaver[Any], server_id: str
) -> ErasureReceipt:
    """Forget everything kioku holds about the server ``server_id``.

    ``checkpointer`` holds the conversation threads to scrub.
    """
    key = server_key(server_id)
    with deps.sessions() as session:
        fragments = _fragments(session, "server", key)
    chats = _scrub_chats(
        deps,
        checkpointer,
        user_id=None,
        names=frozenset(),
        fragments=fragments,
        server_id=server_id,
    )
    with deps.transaction() as session:
        rows = {
            "memories_deleted": _count(
                session, "DELETE FROM memories WHERE scope = 'server' AND server_id = :k", k=key
            ),
            "history_rows_scrubbed": _count(session, _SCRUB_SERVER, k=key),
            "memberships_removed": _count(
                session, "DELETE FROM server_members WHERE server_id = :k", k=key
            ),
        }
        _count(session, "DELETE FROM personas WHERE server_id = :k", k=key)
        _count(session, "DELETE FROM memory_subjects WHERE server_id = :k", k=key)
        rows["directory_rows_deleted"] = _count(session, "DELETE FROM servers WHERE id = :k", k=key)
    return ErasureReceipt("server", server_id, **rows, **chats)
