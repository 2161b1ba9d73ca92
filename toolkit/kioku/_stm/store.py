"""Short-term memory: one ``stm_threads`` row per entry, shared by every process.

Each entry (SPEC §7: scope kind, owner, channel, persona lineage) is a row holding its
state as JSON beside the columns other-channel look-ups filter on; a write replaces the
row (one statement for a turn's entries), so entries survive restarts and every process
using the database sees them. Until migration 0018 entries were LangGraph checkpoint
threads: rows cost a turn one upsert instead of a checkpoint with its blobs, and agents'
checkpoint tables keep only their own conversations.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, cast

import psycopg
from langgraph.checkpoint.base import BaseCheckpointSaver
from sqlalchemy.orm import Session

from kioku._context import PrivacyLevel, TurnContext
from kioku._core import KiokuCore
from kioku._reach import invisible_people, may_remember_message
from kioku._stm.model import (
    Clock,
    StmCandidate,
    StmEntry,
    StmKey,
    StmMessage,
    StmPolicy,
    utc_now,
    with_captured,
    with_summary,
    without_person,
)
from kioku._stm.registry import RECORD_SQL, RecentThreads, StmRegistry, record_params

logger = logging.getLogger(__name__)

ENTRY_CACHE_SIZE = 10_000
"""Entries kept in process; each is revalidated against the registry before use."""

REMEMBERED_TURNS = 10_000
"""Turns whose summary claim is remembered (oldest forgotten first)."""

CANDIDATE_LIMIT = 50
"""Registry rows read per other-channel look-up, before privacy filtering."""


WRITE_LOCK_SPACE = 0x6B696F
"""First key of the advisory locks taken by short-term memory writes."""

EntryChange = Callable[[StmKey, "StmEntry | None", datetime], "StmEntry | None"]
"""Turns a stored entry (or ``None``) into the one to store (``None``: leave it)."""
PsycopgStatement = tuple[str, Any]
"""A statement with psycopg's own ``%(name)s`` parameters, and its parameters."""


STM_CHANGED = "KIO01"
"""SQLSTATE of ``kioku_stm_lock`` when an entry changed since this process read it."""

_LOCK_SQL = "SELECT thread_id, last_updated FROM kioku_stm_lock(%(threads)s, %(expected)s)"


def _send(driver: psycopg.Connection[Any], statements: Sequence[PsycopgStatement]) -> None:
    """Send ``statements`` together, in one pipeline (one round trip, never prepared)."""
    with driver.pipeline(), driver.cursor(binary=True) as cursor:
        for sql, params in statements:
            cursor.execute(sql, params, prepare=False)


def _lock_threads(session: Session, keys: Sequence[StmKey]) -> dict[str, datetime]:
    """Wait for, then hold off, other writers of these entries until the transaction ends.

    Taken in thread-id order (so two writers of overlapping entries cannot deadlock) by
    ``kioku_stm_lock``; returns the registry versions of the entries that exist.
    """
    rows = session.connection().exec_driver_sql(
        _LOCK_SQL, {"threads": [key.thread_id for key in keys], "expected": None}
    )
    return {thread_id: version for thread_id, version in rows if version is not None}


@dataclass(frozen=True, slots=True)
class ForgetReport:
    """What :meth:`ShortTermMemory.forget_person` / ``forget_server`` did."""

    entries_deleted: int = 0
    entries_scrubbed: int = 0
    messages_removed: int = 0


@dataclass(frozen=True, slots=True)
class SweepReport:
    """What :meth:`ShortTermMemory.sweep` did."""

    deleted_threads: int
    """Entries idle past the retention, deleted."""


def policy_from(store: KiokuCore) -> StmPolicy:
    """Lengths and lifetimes from the store's settings."""
    s = store.settings
    return StmPolicy(
        max_messages=s.stm_max_messages_per_channel,
        max_summary_length=s.stm_max_summary_length,
        max_message_length=s.stm_max_message_length,
        ttl=timedelta(hours=s.stm_ttl_hours),
        summary_ttl=timedelta(hours=s.stm_summary_ttl_hours),
    )


def entry_keys(context: TurnContext) -> list[StmKey]:
    """The entries a turn writes: the user's, plus the server's outside DMs."""
    lineage = context.persona.lineage_id
    keys = [StmKey("user", context.user.user_id, context.channel_id, lineage)]
    if context.server_id is not None:
        keys.append(StmKey("server", context.server_id, context.channel_id, lineage))
    return keys


class ShortTermMemory:
    """Reads and writes short-term memory entries.

    Args:
        store: the kioku store (its database holds the entries, in ``stm_threads``).
        checkpointer: not used: entries are rows of kioku's own table since migration
            0018 (accepted so that code passing the graph's checkpointer keeps working).
        clock: returns "now"; tests inject one to move time.
    """

    def __init__(
        self,
        store: KiokuCore,
        checkpointer: BaseCheckpointSaver[Any] | None = None,
        *,
        clock: Clock = utc_now,
    ) -> None:
        """See the class docstring."""
        self.store = store
        self.clock = clock
        self.policy = policy_from(store)
        self._entries: dict[str, StmEntry] = {}
        """Entries last read or written, reused while the registry shows no newer write."""
        self._summarised_turns: OrderedDict[str, None] = OrderedDict()
        self._turn_lock = threading.Lock()

    def load(self, key: StmKey, session: Session | None = None) -> StmEntry | None:
        """The stored entry, expired or not (``None`` if there is none).

        Read in ``session`` when given (the caller's unit of work), else on its own.
        """
        return self._read([key], session).get(key.thread_id)

    def load_versions(
        self, versions: Sequence[tuple[StmKey, datetime]], session: Session | None = None
    ) -> list[StmEntry | None]:
        """Each entry as of its registry version, in order (``None``: gone meanwhile).

        Only entries whose version this process has not seen yet are read, in one query.
        """
        cached = [self._entries.get(key.thread_id) for key, _ in versions]
        missing = [
            key
            for (key, version), entry in zip(versions, cached, strict=True)
            if entry is None or entry.last_updated != version
        ]
        read = self._read(missing, session) if missing else {}
        return [
            read.get(key.thread_id) if key in missing else entry
            for (key, _), entry in zip(versions, cached, strict=True)
        ]

    def load_version(
        self, key: StmKey, last_updated: datetime, session: Session | None = None
    ) -> StmEntry | None:
        """The entry as of ``last_updated`` (the registry's version of it).

        Read only when this process has not seen that version yet.
        """
        return self.load_versions([(key, last_updated)], session)[0]

    def _read(self, keys: Sequence[StmKey], session: Session | None) -> dict[str, StmEntry]:
        with ExitStack() as stack:
            if session is None:
                session = stack.enter_context(self.store.reads())
            found = StmRegistry(session).stored(keys)
        for entry in found.values():
            self._remember(entry)
        return found

    def _remember(self, entry: StmEntry) -> None:
        if len(self._entries) >= ENTRY_CACHE_SIZE:
            self._entries.clear()
        self._entries[entry.key.thread_id] = entry

    def get(self, key: StmKey) -> StmEntry | None:
        """The entry unless it is missing or expired (TTL judged now)."""
        entry = self.load(key)
        if entry is None or self.policy.is_expired(entry, self.clock()):
            return None
        return entry

    def _change(self, keys: Sequence[StmKey], change: EntryChange) -> list[StmEntry]:
        """Read, change and store ``keys``' entries in one transaction, or not at all.

        Writers of the same entries, in any process, are serialised by a transaction
        advisory lock per thread (``kioku_stm_lock``), and an entry is only written over
        the version it was computed from, so a capture and a summary written at once both
        survive. ``change`` gets the stored entry (or ``None``) and "now"; it returns the
        entry to store, or ``None`` to leave it.

        When this process holds every entry's latest version (the usual case: it wrote or
        read them last), the change is computed from them and sent with its version
        check in one pipelined round trip; if another writer came first, the database
        undoes it and the change is made again under the lock from the stored entries.
        """
        written = self._write_from_cache(keys, change)
        if written is None:
            written = self._write_locked(keys, change)
        for entry in written:
            self._remember(entry)
        return written

    def _changed(
        self,
        keys: Sequence[StmKey],
        stored: dict[str, StmEntry],
        versions: dict[str, datetime],
        change: EntryChange,
    ) -> list[StmEntry]:
        """The entries ``change`` makes of ``stored``, each with a version of its own."""
        now = self.clock()
        written: list[StmEntry] = []
        for key in keys:
            version = versions.get(key.thread_id)
            entry = change(key, stored.get(key.thread_id), now)
            if entry is None:
                continue
            if entry.last_updated == version:
                # A new version, so every process sees that the entry changed.
                entry = replace(entry, last_updated=version + timedelta(microseconds=1))
            written.append(entry)
        return written

    def _write_from_cache(
        self, keys: Sequence[StmKey], change: EntryChange
    ) -> list[StmEntry] | None:
        """The optimistic write; ``None`` when it could not be made (nothing written)."""
        cached = {key.thread_id: self._entries.get(key.thread_id) for key in keys}
        stored = {t: e for t, e in cached.items() if e is not None}
        if len(stored) < len(cached):
            return None
        versions = {t: e.last_updated for t, e in stored.items()}
        entries = self._changed(keys, stored, versions, change)
        if not entries:
            return []
        expected = [versions[key.thread_id] for key in keys]
        check = (_LOCK_SQL, {"threads": [key.thread_id for key in keys], "expected": expected})
        try:
            with self.store.autocommit_engine.connect() as connection:
                driver = cast("psycopg.Connection[Any]", connection.connection.driver_connection)
                # One implicit transaction: the version check failing undoes the write.
                _send(driver, [check, (RECORD_SQL, record_params(entries))])
        except psycopg.Error as exc:
            if exc.sqlstate != STM_CHANGED:
                raise
            for key in keys:
                self._entries.pop(key.thread_id, None)
            return None
        return entries

    def _write_locked(self, keys: Sequence[StmKey], change: EntryChange) -> list[StmEntry]:
        """Lock, read what this process lacks, change and write, in one transaction."""
        with self.store.transaction() as session:
            versions = _lock_threads(session, keys)
            known = [(key, versions[key.thread_id]) for key in keys if key.thread_id in versions]
            loaded = self.load_versions(known, session)
            stored = {e.key.thread_id: e for e in loaded if e is not None}
            entries = self._changed(keys, stored, versions, change)
            if entries:
                StmRegistry(session).record(entries)
        return entries

    def _fresh_or_new(
        self, key: StmKey, stored: StmEntry | None, context: TurnContext, now: datetime
    ) -> StmEntry:
        """The stored entry unless missing or expired, else a new one for this channel.

        A turn in a private channel marks the entry private for as long as it lives.
        """
        if stored is not None and not self.policy.is_expired(stored, now):
            if context.is_private_channel and not stored.private:
                return replace(stored, private=True)
            return stored
        return StmEntry(
            key=key,
            summary=None,
            server_id=context.server_id,
            server_name=context.server_name,
            channel_name=context.channel_name,
            parent_channel_id=context.parent_channel_id,
            persona_id=context.persona.persona_id,
            last_updated=now,
            private=context.is_private_channel,
        )

    def capture(self, context: TurnContext, messages: Sequence[StmMessage]) -> bool:
        """Passive capture after a turn; skipped (``False``) for FULL-privacy triggerers.

        Messages of FULL-privacy participants (and replies to them) are never kept
        (:func:`kioku._reach.may_remember_message`).
        """
        if context.user.privacy == PrivacyLevel.FULL:
            return False
        invisible = invisible_people(context)
        messages = [
            m
            for m in messages
            if may_remember_message(m.user_id, marked_private=False, invisible=invisible)
        ]
        self._change(
            entry_keys(context),
            lambda key, stored, now: with_captured(
                self._fresh_or_new(key, stored, context, now), messages, self.policy, now
            ),
        )
        return True

    def write_summary(self, context: TurnContext, summary: str) -> str:
        """Store ``summary`` (truncated silently) in this channel's entries; returns it."""
        written = self._change(
            entry_keys(context),
            lambda key, stored, now: with_summary(
                self._fresh_or_new(key, stored, context, now), summary, self.policy, now
            ),
        )
        return written[0].summary or ""

    def claim_summary_turn(self, turn_id: str) -> bool:
        """Reserve this turn's one summary write; ``False`` if it was already taken.

        Atomic within the process, so parallel tool calls of one turn cannot both write.
        """
        with self._turn_lock:
            if turn_id in self._summarised_turns:
                return False
            self._summarised_turns[turn_id] = None
            while len(self._summarised_turns) > REMEMBERED_TURNS:
                self._summarised_turns.popitem(last=False)
            return True

    def release_summary_turn(self, turn_id: str) -> None:
        """Give a claim back after a failed write."""
        with self._turn_lock:
            self._summarised_turns.pop(turn_id, None)

    def recent_threads(
        self, context: TurnContext, *, cross_server: bool | None = None
    ) -> RecentThreads:
        """The registry rows ``context``'s turn might recall from (:meth:`candidates`).

        For a caller reading them in a statement of its own (the context build reads them
        with the turn's settings); :meth:`recallable` then filters them.
        """
        now = self.clock()
        return RecentThreads(
            user_id=context.user.user_id,
            server_id=context.server_id,
            cross_server=cross_server,
            lineage_id=context.persona.lineage_id,
            exclude_channel=context.channel_id,
            ttl_cutoff=now - self.policy.ttl,
            summary_cutoff=now - self.policy.summary_ttl,
            limit=CANDIDATE_LIMIT,
        )

    @staticmethod
    def recallable(context: TurnContext, rows: Sequence[StmCandidate]) -> list[StmCandidate]:
        """:meth:`recent_threads`' rows less the user's own entries of this server's channels.

        Those duplicate the server's entries (in a DM every row stays).
        """
        in_dm = context.server_id is None
        return [
            row
            for row in rows
            if in_dm or row.key.kind == "server" or row.server_id != context.server_id
        ]

    def candidates(
        self,
        context: TurnContext,
        *,
        cross_server: bool | None = None,
        session: Session | None = None,
    ) -> list[StmCandidate]:
        """Other-channel entries this turn might recall, newest first, before privacy filtering.

        The user's own entries of other servers' channels (and, in a DM, of any server's)
        only with the user's cross-server opt-in: ``cross_server``, or when ``None`` the
        ``users`` row's flag, read in the same statement. Uses ``session`` when given (the
        caller's unit of work), else a session of its own.
        """
        query = self.recent_threads(context, cross_server=cross_server)
        with ExitStack() as stack:
            if session is None:
                session = stack.enter_context(self.store.sessions())
            rows = StmRegistry(session).recent(query)
        return self.recallable(context, rows)

    def forget(
        self,
        user_id: str | None,
        name_keys: frozenset[str] = frozenset(),
        fragments: frozenset[str] = frozenset(),
    ) -> ForgetReport:
        """Remove a person's messages, and replies to them, from every entry.

        Their own user entries (``user_id``) are deleted; other entries are rewritten
        without their messages, without the bot's messages repeating an erased memory's
        ``fragments``, and without a summary that may retell either (each entry is one
        row: no older version keeps them). Entries written meanwhile by another process
        are checked again once.
        """
        started = self.clock()
        deleted = scrubbed = removed = 0
        for since in (None, started):
            with self.store.sessions() as session:
                candidates = StmRegistry(session).entries(since=since)
            own = [c.key for c in candidates if c.key.kind == "user" and c.key.owner_id == user_id]
            deleted += self._delete(own)
            others = [c.key for c in candidates if c.key not in own]
            for key in others:
                count = self._scrub(key, user_id, name_keys, fragments)
                if count is not None:
                    scrubbed += 1
                    removed += count
        return ForgetReport(deleted, scrubbed, removed)

    def _scrub(
        self,
        key: StmKey,
        user_id: str | None,
        name_keys: frozenset[str],
        fragments: frozenset[str],
    ) -> int | None:
        """Rewrite one entry without the person; messages removed, ``None`` if unchanged."""
        counts: list[int] = []

        def scrub(_: StmKey, stored: StmEntry | None, now: datetime) -> StmEntry | None:
            if stored is None:
                return None
            cleaned, count = without_person(stored, user_id, name_keys, fragments)
            counts[:] = [count]  # the change may be made twice (see _change)
            return None if cleaned is stored else cleaned

        return sum(counts) if self._change([key], scrub) else None

    def forget_server(self, server_id: str) -> ForgetReport:
        """Delete every entry of the server's channels (server and user entries alike)."""
        with self.store.sessions() as session:
            candidates = StmRegistry(session).entries()
        doomed = [
            c.key
            for c in candidates
            if c.server_id == server_id or (c.key.kind == "server" and c.key.owner_id == server_id)
        ]
        return ForgetReport(entries_deleted=self._delete(doomed))

    def _delete(self, keys: Sequence[StmKey]) -> int:
        """Delete entries in one transaction, after their writers."""
        if not keys:
            return 0
        with self.store.transaction() as session:
            _lock_threads(session, keys)
            StmRegistry(session).forget([key.thread_id for key in keys])
        for key in keys:
            self._entries.pop(key.thread_id, None)
        return len(keys)

    def sweep(self, *, retention: timedelta, session: Session | None = None) -> SweepReport:
        """Delete the entries idle longer than ``retention``.

        In ``session`` when given (the caller's transaction), else in a transaction of its own.
        """
        with ExitStack() as stack:
            if session is None:
                session = stack.enter_context(self.store.transaction())
            deleted = StmRegistry(session).delete_idle(self.clock() - retention)
        return SweepReport(deleted_threads=deleted)
