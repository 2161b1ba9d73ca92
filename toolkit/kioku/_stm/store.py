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
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from sqlalchemy.orm import Session

from kioku._context import PrivacyLevel, TurnContext
from kioku._deps import HasDeps, KiokuDeps
from kioku._reach import invisible_people, may_remember_message
from kioku._stm.entries import StmEntries
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
from kioku._stm.registry import RecentThreads, StmRegistry

logger = logging.getLogger(__name__)

REMEMBERED_TURNS = 10_000
"""Turns whose summary claim is remembered (oldest forgotten first)."""

CANDIDATE_LIMIT = 50
"""Registry rows read per other-channel look-up, before privacy filtering."""


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


def policy_from(deps: KiokuDeps) -> StmPolicy:
    """Lengths and lifetimes from the settings."""
    s = deps.settings
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


class ShortTermMemory(StmEntries):
    """Reads and writes short-term memory entries.

    Args:
        store: the kioku store (its database holds the entries, in ``stm_threads``).
        checkpointer: not used: entries are rows of kioku's own table since migration
            0018 (accepted so that code passing the graph's checkpointer keeps working).
        clock: returns "now"; tests inject one to move time.
    """

    def __init__(
        self,
        store: HasDeps,
        checkpointer: BaseCheckpointSaver[Any] | None = None,
        *,
        clock: Clock = utc_now,
    ) -> None:
        """See the class docstring."""
        super().__init__(store, clock)
        self.policy = policy_from(self.deps)
        self._summarised_turns: OrderedDict[str, None] = OrderedDict()
        self._turn_lock = threading.Lock()

    def get(self, key: StmKey) -> StmEntry | None:
        """The entry unless it is missing or expired (TTL judged now)."""
        entry = self.load(key)
        if entry is None or self.policy.is_expired(entry, self.clock()):
            return None
        return entry

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
                session = stack.enter_context(self.deps.sessions())
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
            with self.deps.sessions() as session:
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
        with self.deps.sessions() as session:
            candidates = StmRegistry(session).entries()
        doomed = [
            c.key
            for c in candidates
            if c.server_id == server_id or (c.key.kind == "server" and c.key.owner_id == server_id)
        ]
        return ForgetReport(entries_deleted=self._delete(doomed))

    def sweep(self, *, retention: timedelta, session: Session | None = None) -> SweepReport:
        """Delete the entries idle longer than ``retention``.

        In ``session`` when given (the caller's transaction), else in a transaction of its own.
        """
        with ExitStack() as stack:
            if session is None:
                session = stack.enter_context(self.deps.transaction())
            deleted = StmRegistry(session).delete_idle(self.clock() - retention)
        return SweepReport(deleted_threads=deleted)
