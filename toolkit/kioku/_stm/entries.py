"""Short-term memory entries as stored rows, kept in step with every process's writes.

:class:`StmEntries` reads entries (reusing those this process holds while the registry
shows no newer version) and changes them in one transaction each, serialised per thread
with every other writer; :class:`~kioku._stm.store.ShortTermMemory` builds on it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import psycopg
from sqlalchemy.orm import Session

from kioku._db.driver import driver_connection
from kioku._deps import HasDeps
from kioku._stm.model import Clock, StmEntry, StmKey
from kioku._stm.registry import RECORD_SQL, StmRegistry, record_params

ENTRY_CACHE_SIZE = 10_000
"""Entries kept in process; each is revalidated against the registry before use."""

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
    """Send ``statements`` together, in one pipeline (one round trip, never prepared).

    Never prepared: prepared, a write racing another writer of the same entries (its
    version check failing, then the locked write) met ``prepared statement … does not
    exist`` (``tests/test_stm_writes.py``); the cause is not pinned down.
    """
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


class StmEntries:
    """Reads and versioned writes of short-term memory entries (module docstring)."""

    def __init__(self, store: HasDeps, clock: Clock) -> None:
        """Entries of ``store``'s database; ``clock`` returns "now" (tests move it)."""
        self.deps = store.deps
        self.clock = clock
        self._entries: dict[str, StmEntry] = {}
        """Entries last read or written, reused while the registry shows no newer write."""

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
                session = stack.enter_context(self.deps.reads())
            found = StmRegistry(session).stored(keys)
        for entry in found.values():
            self._remember(entry)
        return found

    def _remember(self, entry: StmEntry) -> None:
        if len(self._entries) >= ENTRY_CACHE_SIZE:
            self._entries.clear()
        self._entries[entry.key.thread_id] = entry

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
            with self.deps.autocommit_engine.connect() as connection:
                driver = driver_connection(connection)
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
        with self.deps.transaction() as session:
            versions = _lock_threads(session, keys)
            known = [(key, versions[key.thread_id]) for key in keys if key.thread_id in versions]
            loaded = self.load_versions(known, session)
            stored = {e.key.thread_id: e for e in loaded if e is not None}
            entries = self._changed(keys, stored, versions, change)
            if entries:
                StmRegistry(session).record(entries)
        return entries

    def _delete(self, keys: Sequence[StmKey]) -> int:
        """Delete entries in one transaction, after their writers."""
        if not keys:
            return 0
        with self.deps.transaction() as session:
            _lock_threads(session, keys)
            StmRegistry(session).forget([key.thread_id for key in keys])
        for key in keys:
            self._entries.pop(key.thread_id, None)
        return len(keys)
