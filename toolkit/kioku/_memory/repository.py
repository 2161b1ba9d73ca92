"""Memory rows and their history, in the caller's session (the caller commits)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any, cast

from psycopg.types.json import Jsonb
from sqlalchemy import ColumnElement, TextClause, func, select, text
from sqlalchemy.orm import Session

from kioku._accounts import SETTINGS_SOURCE, settings_from_row, settings_params
from kioku._context import GLOBAL_LINEAGE
from kioku._db.driver import fetch_all
from kioku._db.models import Memory, MemoryHistory
from kioku._db.vectors import halfvec_text
from kioku._domain.records import MemoryRecord
from kioku._domain.scopes import PersonalScope, ServerScope, VersionKey
from kioku._domain.settings import ServerSettings
from kioku._domain.writes import ContentChange, CreateOutcome, NewMemory, ScopedUpdate
from kioku._search.query import owner_filters, owners_sql
from kioku._search.sql import search_params

__all__ = ["GLOBAL_LINEAGE", "MemoryRepository"]


_RECORD_COLUMNS = (
    Memory.id,
    Memory.scope,
    Memory.server_id,
    Memory.user_id,
    Memory.persona_lineage_id,
    Memory.content,
    Memory.created_at,
    Memory.updated_at,
    Memory.event_time,
    Memory.happened_at,
    Memory.memory_type,
)
"""The columns of :class:`MemoryRecord`, in its field order."""


def _record(row: Memory) -> MemoryRecord:
    return MemoryRecord(
        id=row.id,
        scope=row.scope,
        server_id=row.server_id,
        user_id=row.user_id,
        persona_lineage_id=row.persona_lineage_id,
        content=row.content,
        created_at=row.created_at,
        updated_at=row.updated_at,
        event_time=row.event_time,
        happened_at=row.happened_at,
        memory_type=row.memory_type,
    )


_LOCK_SCOPE = text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))")
"""The lock ``kioku_create_memory_within_limit`` takes on ``p_lock_key``."""
_SETTINGS_LOCKING = text(
    f"SELECT s.*, pg_advisory_xact_lock(hashtextextended(:lock, 0)) FROM {SETTINGS_SOURCE} AS s"
)
"""The server's settings, read as the scope's lock (:data:`_LOCK_SCOPE`) is taken."""


def _same_event_as(memory_type: str, attributes: dict[str, Any]) -> ColumnElement[bool]:
    """Whether a stored memory records the same thing as a new one (``kioku_same_event``).

    The new one is of ``memory_type`` and happens at its ``attributes`` event time, else
    now (migration 0014).
    """
    return func.kioku_same_event(
        Memory.memory_type,
        Memory.happened_at,
        memory_type,
        func.coalesce(func.kioku_event_time(Jsonb(attributes)), func.now()),
    )


_CREATE_MEMORY = "SELECT * FROM kioku_create_memory_within_limit({})".format(", ".join(["%s"] * 19))
"""The one-round-trip create (``_db/sql/kioku_create_memory_within_limit.19.sql``), sent as
driver SQL: the hot write path skips statement compilation and SQLAlchemy's parameters."""
_CREATE_ABOUT = (
    f"WITH saved AS ({_CREATE_MEMORY}), about AS ("
    "INSERT INTO memory_subjects (memory_id, user_id, server_id) "
    "SELECT memory_id, %s, %s FROM saved WHERE memory_id IS NOT NULL ON CONFLICT DO NOTHING"
    ") SELECT * FROM saved"
)
"""The create of a memory about a bridged user, who is recorded (``memory_subjects``) in
the same statement: atomic even when sent on its own."""

_UPDATE_ALLOWED = (
    "(CAST(:allowed AS boolean[]))"
    "[1 + 2 * s.self_teaching_enabled::int + s.personal_memories_enabled::int]"
)
"""Whether the update may happen with the server's settings ``s``: the answer the write
decision gave for them (:func:`kioku._memory.write_decision.decisions_by_settings`), looked
up, not decided again."""

_UPDATE_IN_SCOPE = (
    "WITH settings AS MATERIALIZED (SELECT self_teaching_enabled, personal_memories_enabled "
    "FROM {settings}), "
    "target AS MATERIALIZED (SELECT {columns} FROM memories "
    "WHERE id = :id AND status = 'active' AND ({owners}) "
    f"AND (SELECT {_UPDATE_ALLOWED} FROM settings AS s) FOR NO KEY UPDATE) "
    "SELECT changed.*, settings.* FROM settings LEFT JOIN LATERAL ("
    "SELECT target.*, versioned.* FROM target CROSS JOIN LATERAL "
    "kioku_update_memory_versioned(target.id, :content, CAST(:embedding AS halfvec), "
    ":actor, :persona, CAST(:event_time AS text), CAST(:embedder AS text)) AS versioned) "
    "AS changed ON true"
)
"""Read the server's settings; if the write decision allows the change with them, lock the
memory if it lies in the scope and update it: new content and embedding (and event time,
when given), its history row (a trigger) naming the actor. One statement, atomic on its
own: answers with the two settings read, and, when it changed the memory, the row as it
was and the scope version the update replaced and made, and whether the vector was stored
(otherwise those columns are ``NULL``)."""


@lru_cache(maxsize=8)
def _update_in_scope_statement(owners: tuple[str, ...]) -> str:
    return _UPDATE_IN_SCOPE.format(
        settings=SETTINGS_SOURCE,
        columns=", ".join(column.key for column in _RECORD_COLUMNS),
        owners=" OR ".join(f"({sql})" for sql in owners),
    )


VERSIONS_SQL = (
    "ARRAY(SELECT c.version FROM unnest(CAST(:s AS text[]), CAST(:o AS text[]), "
    "CAST(:l AS bigint[])) WITH ORDINALITY AS k(scope, owner_id, lineage, n) "
    "LEFT JOIN memory_counts AS c "
    "ON (c.scope, c.owner_id, c.persona_lineage_id) = (k.scope, k.owner_id, k.lineage) "
    "ORDER BY k.n)"
)
"""The versions of the ``(scope, owner, lineage)`` keys bound as ``:s``, ``:o``, ``:l``, in
their order (``NULL`` for a key without a row): an expression other reads embed."""


def version_params(keys: Sequence[VersionKey]) -> dict[str, list[Any]]:
    """Bind parameters of :data:`VERSIONS_SQL` for ``keys``."""
    return {
        "s": [k[0] for k in keys],
        "o": [k[1] for k in keys],
        "l": [k[2] for k in keys],
    }


def versions_of(keys: Sequence[VersionKey], found: Sequence[int | None]) -> dict[VersionKey, int]:
    """:data:`VERSIONS_SQL`'s answer as a map (keys without a row left out)."""
    return {key: version for key, version in zip(keys, found, strict=True) if version is not None}


class MemoryRepository:
    """Queries and writes on ``memories`` and ``memory_history``."""

    def __init__(self, session: Session) -> None:
        """Work inside ``session``; the caller opens the transaction and commits."""
        self.session = session

    def window(
        self, scope: ServerScope | PersonalScope, limit: int
    ) -> tuple[list[MemoryRecord], int]:
        """The ``limit`` newest active memories of ``scope`` and how many it holds in all."""
        rows = self.session.execute(
            select(*_RECORD_COLUMNS, func.count().over().label("total"))
            .where(Memory.status == "active", *self._scope_filter(scope))
            .order_by(Memory.created_at.desc(), Memory.id.desc())
            .limit(limit)
        ).all()
        total = int(rows[0].total) if rows else 0
        return [MemoryRecord(*cast(tuple[Any, ...], row)[:-1]) for row in rows], total

    def holds(
        self,
        scope: ServerScope | PersonalScope,
        content: str,
        memory_type: str,
        attributes: dict[str, Any],
    ) -> bool:
        """Whether ``scope`` holds an active memory of exactly ``content`` (embedded or not).

        Only one recording the same thing as the new memory counts (:meth:`same_event`).
        """
        found = self.session.scalar(
            select(Memory.id)
            .where(
                Memory.status == "active",
                *self._scope_filter(scope),
                Memory.content == content,
                _same_event_as(memory_type, attributes),
            )
            .limit(1)
        )
        return found is not None

    def same_event(self, memory_id: int, memory_type: str, attributes: dict[str, Any]) -> bool:
        """Whether memory ``memory_id`` and a new one record the same thing, by time.

        ``kioku_same_event`` (migration 0014) decides: when either is episodic, memories
        that happened on different days (UTC) record different things. The new one happens at its
        ``attributes`` event time, else now.
        """
        return bool(
            self.session.scalar(
                select(_same_event_as(memory_type, attributes)).where(Memory.id == memory_id)
            )
        )

    def list(self, scope: ServerScope | PersonalScope) -> list[MemoryRecord]:
        """Active memories in ``scope``, newest first (only the columns a record needs)."""
        rows = self.session.execute(
            select(*_RECORD_COLUMNS)
            .where(Memory.status == "active", *self._scope_filter(scope))
            .order_by(Memory.created_at.desc(), Memory.id.desc())
        )
        return [MemoryRecord(*cast(tuple[Any, ...], row)) for row in rows]

    def create_within_limit(self, new: NewMemory) -> CreateOutcome:
        """Save ``new`` unless its scope is full or holds it already: one round trip.

        The server-side ``kioku_create_memory_within_limit`` receives what the write
        decision decided (the limit, whether to look for an exact repeat) and reads no
        settings: it takes the scope's advisory lock (serialising writers, so the limit
        holds under concurrency), looks for the exact repeat, counts, inserts the row (its
        ``create`` history row by trigger), and inserts the server (and the owner of a
        personal memory) when missing. Without an embedding, or with one of another model
        than the database records (``kioku_vector_columns``), the row is queued for
        re-embedding (``needs_embedding``). A memory about a bridged user records them
        (``memory_subjects``) in the same statement.

        Run it as its own statement outside a transaction (it is atomic) or inside one.
        """
        scope = new.scope
        parameters: tuple[object, ...] = (
            new.server_key,
            new.server_name,
            scope.kind,
            scope.owner_id,
            new.owner_name,
            new.owner_key,
            scope.lineage_id,
            scope.lock_key,
            new.limit,
            new.persona_id,
            new.created_by,
            new.content,
            halfvec_text(new.embedding) if new.embedding is not None else None,
            new.memory_type,
            new.importance,
            new.decay_rate,
            Jsonb(new.attributes),
            new.check_repeat,
            new.embedder,
        )
        statement = _CREATE_MEMORY
        if new.about_user_id is not None:
            statement = _CREATE_ABOUT
            parameters += (new.about_user_id, new.server_key)
        row = self.session.connection().exec_driver_sql(statement, parameters).one()
        refused = new.embedding is not None and row.embedded is False
        return CreateOutcome(row.outcome, row.memory_id, row.saved_count, refused)

    def settings_locking(
        self, scope: ServerScope | PersonalScope, server_key: str, *, is_dm: bool
    ) -> ServerSettings:
        """The settings of the server ``server_key``, read as the scope's write lock is taken.

        The lock is :meth:`lock_scope`'s, held until the transaction ends: one round trip
        for the settings the write decision needs and the lock a comparison with the
        scope's memories needs.
        """
        row = self.session.execute(
            _SETTINGS_LOCKING, {**settings_params(server_key, is_dm), "lock": scope.lock_key}
        ).one()
        return settings_from_row(row)

    def lock_scope(self, scope: ServerScope | PersonalScope) -> None:
        """Take the scope's write lock until the transaction ends (``create_within_limit``'s).

        Held from before a comparison with the scope's memories, it makes a concurrent
        writer's new memory visible to that comparison: the second of two writers sees the
        first one's memory, or the first has not started yet.
        """
        self.session.execute(_LOCK_SCOPE, {"key": scope.lock_key})

    def find_for_update(
        self, memory_id: int, scope: ServerScope | PersonalScope
    ) -> MemoryRecord | None:
        """The memory ``memory_id`` if it lies in ``scope``, locked for this transaction.

        ``FOR NO KEY UPDATE``: writers of the row wait, the access-count flush (which only
        references the row) does not.
        """
        row = self.session.execute(
            select(*_RECORD_COLUMNS)
            .where(Memory.id == memory_id, Memory.status == "active", *self._scope_filter(scope))
            .with_for_update(key_share=True)
        ).first()
        return MemoryRecord(*cast(tuple[Any, ...], row)) if row is not None else None

    def settled_content(self, memory_id: int) -> str | None:
        """The active memory's content once no transaction is changing it (``None``: gone)."""
        return self.session.scalar(
            select(Memory.content)
            .where(Memory.id == memory_id, Memory.status == "active")
            .with_for_update(read=True)
        )

    def get(self, memory_id: int) -> MemoryRecord | None:
        """The memory ``memory_id`` in any scope (for hints and tests)."""
        row = self.session.get(Memory, memory_id)
        return _record(row) if row is not None else None

    def update_in_scope(
        self,
        memory_id: int,
        scope: ServerScope | PersonalScope,
        new: str,
        *,
        settings_key: str,
        is_dm: bool,
        allowed: Sequence[bool],
        actor: str | None,
        persona_id: int | None,
        embedding: Sequence[float] | None = None,
        embedder: str | None = None,
        event_time: datetime | None = None,
    ) -> ScopedUpdate:
        """Replace the content and embedding of ``memory_id`` if it lies in ``scope``.

        One statement reads the settings of the server ``settings_key`` and, when the
        write decision allows the update with them (``allowed``: its answers by settings,
        :func:`kioku._memory.write_decision.decisions_by_settings`), locks the row (as
        :meth:`find_for_update`) and updates it (``created_at`` kept; a trigger logs it).
        Atomic on its own, so it may run outside a transaction. ``event_time`` (UTC), when
        given, becomes the memory's ``attributes.event_time``; ``embedder``: the model that
        made ``embedding`` (stored only while the database records it).
        """
        visibility = scope.visibility()
        [row] = fetch_all(
            self.session,
            _update_in_scope_statement(tuple(owners_sql(visibility))),
            {
                **search_params(visibility),
                **settings_params(settings_key, is_dm),
                "allowed": list(allowed),
                "id": memory_id,
                "content": new,
                "embedding": halfvec_text(embedding) if embedding is not None else None,
                "embedder": embedder,
                "actor": actor,
                "persona": persona_id,
                "event_time": event_time.isoformat() if event_time is not None else None,
            },
            named=True,
        )
        updated = None
        if row.id is not None:
            old = MemoryRecord(*cast(tuple[Any, ...], row)[: len(_RECORD_COLUMNS)])
            key = (row.scope_kind, row.scope_owner, row.scope_lineage) if row.scope_kind else None
            updated = (
                old,
                ContentChange(
                    memory_id, new, row.changed_at, key, row.version_before, row.version_after
                ),
            )
        refused = embedding is not None and row.embedded is False
        settings = (row.self_teaching_enabled, row.personal_memories_enabled)
        return ScopedUpdate(*settings, updated, refused)

    def delete(self, memory_id: int, *, actor: str | None, persona_id: int | None) -> None:
        """Delete the memory (its ``delete`` history row names ``actor``)."""
        self.session.execute(
            text("SELECT kioku_delete_memory(:id, :actor, :persona)"),
            {"id": memory_id, "actor": actor, "persona": persona_id},
        )

    def versions(self, keys: Sequence[tuple[str, str, int]]) -> dict[tuple[str, str, int], int]:
        """The current version of each ``(scope, owner, lineage)`` that has one."""
        if not keys:
            return {}
        found = self.session.execute(text(f"SELECT {VERSIONS_SQL}"), version_params(keys))
        return versions_of(keys, found.scalar_one())

    def history(self, memory_id: int) -> Sequence[MemoryHistory]:
        """Every change to ``memory_id``, oldest first."""
        return self.session.scalars(
            select(MemoryHistory)
            .where(MemoryHistory.memory_id == memory_id)
            .order_by(MemoryHistory.id)
        ).all()

    @staticmethod
    def _scope_filter(scope: ServerScope | PersonalScope) -> tuple[TextClause, ...]:
        return tuple(owner_filters(scope.visibility()))
