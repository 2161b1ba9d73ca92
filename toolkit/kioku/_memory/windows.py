"""The newest memories of each scope, cached while the scope's version stays the same."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, replace

from sqlalchemy.orm import Session, sessionmaker

from kioku._domain.records import MemoryRecord
from kioku._domain.scopes import PersonalScope, ServerScope, VersionKey
from kioku._domain.writes import ContentChange
from kioku._memory.cache import ScopeCache
from kioku._memory.repository import MemoryRepository

CacheKey = ServerScope | PersonalScope

MEMORY_WINDOW = 200
"""Memories of one scope a context build loads, newest first. More than a block's token
budget holds (2,000 tokens), so a scope within it is loaded whole; larger scopes (limits
raised far above the default 100) are rendered from the window plus the most relevant
memories found by search, and never loaded whole."""


@dataclass(frozen=True)
class MemoryWindow:
    """The newest memories of a scope and how many the scope holds (shared: not changed)."""

    records: tuple[MemoryRecord, ...]
    total: int


class MemoryWindows:
    """Each scope's :class:`MemoryWindow`, reused while the database shows no newer write."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        """Windows read in ``sessions`` (when the caller passes no session of its own)."""
        self._sessions = sessions
        self.cache: ScopeCache[CacheKey, MemoryWindow] = ScopeCache()

    def window(self, scope: CacheKey) -> MemoryWindow:
        """The newest active memories of ``scope`` and their total.

        At most ``MEMORY_WINDOW`` are loaded; a scope within the window is loaded whole.
        """
        with self._sessions() as session:
            return self.windows(session, [scope])[scope]

    def windows(
        self,
        session: Session,
        scopes: Sequence[CacheKey],
        versions: Mapping[VersionKey, int | None] | None = None,
    ) -> dict[CacheKey, MemoryWindow]:
        """:meth:`window` of several scopes, checked for staleness in one query.

        A cached window is reused only while the scope's version in the database is the
        one it was loaded at, so writes of every process are seen at once. ``versions``
        (read in this session, e.g. with the turn's settings) spares that query.
        """
        memories = MemoryRepository(session)
        keys = {scope: scope.version_keys() for scope in scopes}
        current = (
            versions
            if versions is not None
            else memories.versions([k for ks in keys.values() for k in ks])
        )
        windows: dict[CacheKey, MemoryWindow] = {}
        for scope in scopes:
            # Versions are read before the window, so a write in between only costs a reload.
            version = tuple(current.get(key) for key in keys[scope])
            window = self.cache.get(scope, version)
            if window is None:
                records, total = memories.window(scope, MEMORY_WINDOW)
                window = MemoryWindow(tuple(records), total)
                self.cache.put(scope, version, window)
            windows[scope] = window
        return windows

    def held_versions(self, scopes: Sequence[CacheKey]) -> dict[VersionKey, int | None] | None:
        """The versions the windows of ``scopes`` are held at (``None``: one is not held).

        What a build may assume the database shows, to be checked against what it reads.
        """
        versions: dict[VersionKey, int | None] = {}
        for scope in scopes:
            held = self.cache.held_version(scope)
            if not isinstance(held, tuple):
                return None
            versions.update(zip(scope.version_keys(), held, strict=True))
        return versions

    def applied_update(self, scope: CacheKey, change: ContentChange) -> None:
        """After ``change`` committed: apply it to ``scope``'s cached window, or drop it.

        The window is kept (at the version the change made) only when it was cached at
        the version the change replaced, so it equals what a reload would read.
        """
        keys = scope.version_keys()
        if (
            change.key not in keys
            or change.version_before is None
            or change.version_after is None
            or change.changed_at is None
        ):
            self.invalidate(scope)
            return
        at, before, after = keys.index(change.key), change.version_before, change.version_after
        changed_at = change.changed_at

        def revise(version: Hashable, window: MemoryWindow) -> tuple[Hashable, MemoryWindow] | None:
            if not isinstance(version, tuple) or version[at] != before:
                return None
            records = tuple(
                replace(r, content=change.content, updated_at=changed_at)
                if r.id == change.memory_id
                else r
                for r in window.records
            )
            return (*version[:at], after, *version[at + 1 :]), MemoryWindow(records, window.total)

        if isinstance(scope, PersonalScope):
            self._drop_other_lineages(scope)
        self.cache.revise(scope, revise)

    def invalidate(self, scope: CacheKey) -> None:
        """Drop cached memories of ``scope`` (called after a committed write)."""
        if isinstance(scope, PersonalScope):
            self._drop_other_lineages(scope)
        self.cache.invalidate(scope)

    def _drop_other_lineages(self, scope: PersonalScope) -> None:
        # Personal reads of every lineage include the globals, so a write changes them all.
        for key in self.cache.cached_keys():
            if isinstance(key, PersonalScope) and key.user_id == scope.user_id and key != scope:
                self.cache.invalidate(key)
