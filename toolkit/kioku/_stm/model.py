"""Short-term memory entries and their rules (SPEC §7): pure, no I/O."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from kioku._memory.text import normalise_name
from kioku._redaction import mentions, names_person

ScopeKind = Literal["server", "user"]
STM_THREAD_PREFIX = "kioku-stm:"
"""Every short-term memory thread's id starts with this."""
Clock = Callable[[], datetime]


def utc_now() -> datetime:
    """The default clock."""
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class StmMessage:
    """One captured message."""

    role: Literal["user", "assistant"]
    speaker: str
    """Display name of whoever wrote it (the persona's name for the bot)."""
    text: str
    at: datetime
    """When the original message was sent (not when it was captured)."""
    user_id: str | None = None
    """The person the message belongs to: its author, or for a reply, the person answered.
    Erasing that person removes it; ``None`` when unknown."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form stored in the checkpoint."""
        return {
            "role": self.role,
            "speaker": self.speaker,
            "text": self.text,
            "at": self.at.isoformat(),
            "user_id": self.user_id,
        }

    @staticmethod
    def from_dict(data: dict[str, Any]) -> StmMessage:
        """Inverse of :meth:`to_dict`."""
        return StmMessage(
            data["role"],
            data["speaker"],
            data["text"],
            datetime.fromisoformat(data["at"]),
            data.get("user_id"),
        )


def _escaped(part: str) -> str:
    return part.replace("%", "%25").replace(":", "%3A")


@dataclass(frozen=True, slots=True)
class StmKey:
    """Identity of one entry: ``(scope kind, owner, channel, persona lineage)``."""

    kind: ScopeKind
    owner_id: str
    """Server id for ``server`` entries, user id for ``user`` entries."""
    channel_id: str
    lineage_id: int

    @property
    def thread_id(self) -> str:
        """The LangGraph thread holding this entry.

        Ids are escaped (``%`` and ``:``), so ``hs:a`` + ``b`` never meets ``hs`` + ``a:b``.
        """
        owner, channel = _escaped(self.owner_id), _escaped(self.channel_id)
        return f"{STM_THREAD_PREFIX}{self.kind}:{owner}:{channel}:{self.lineage_id}"


@dataclass(frozen=True, slots=True)
class StmCandidate:
    """A registry row: enough to decide, before loading, whether an entry may be shown."""

    key: StmKey
    server_id: str | None
    parent_channel_id: str | None
    last_updated: datetime
    private: bool = False
    """The channel was private (``TurnContext.is_private_channel``) when it was written."""


@dataclass(frozen=True, slots=True)
class StmEntry:
    """An entry: recent messages, an optional summary, and where it came from."""

    key: StmKey
    messages: tuple[StmMessage, ...] = ()
    summary: str | None = None
    server_id: str | None = None
    server_name: str | None = None
    channel_name: str | None = None
    parent_channel_id: str | None = None
    persona_id: int | None = None
    last_updated: datetime = field(default_factory=utc_now)
    private: bool = False
    """Written in a channel its turn called private (``TurnContext.is_private_channel``):
    recalled only where the server's private channels are (once set, kept until the
    entry expires)."""
    speakers: tuple[str, ...] = ()
    """The people whose messages the entry has held since it began (newest last, at most
    :data:`MAX_SPEAKERS`), theirs or replies to them: a summary may retell any of them."""

    def to_state(self) -> dict[str, Any]:
        """The values stored in the entry's LangGraph thread."""
        return {
            "messages": [m.to_dict() for m in self.messages],
            "summary": self.summary,
            "meta": {
                "server_id": self.server_id,
                "server_name": self.server_name,
                "channel_name": self.channel_name,
                "parent_channel_id": self.parent_channel_id,
                "persona_id": self.persona_id,
                "last_updated": self.last_updated.isoformat(),
                "private": self.private,
                "speakers": list(self.speakers),
            },
        }

    @staticmethod
    def from_state(key: StmKey, values: dict[str, Any]) -> StmEntry | None:
        """Rebuild an entry from thread values (``None`` for an empty thread)."""
        meta = values.get("meta")
        if not meta:
            return None
        return StmEntry(
            key=key,
            messages=tuple(StmMessage.from_dict(m) for m in values.get("messages") or ()),
            summary=values.get("summary"),
            server_id=meta.get("server_id"),
            server_name=meta.get("server_name"),
            channel_name=meta.get("channel_name"),
            parent_channel_id=meta.get("parent_channel_id"),
            persona_id=meta.get("persona_id"),
            last_updated=datetime.fromisoformat(meta["last_updated"]),
            private=bool(meta.get("private", False)),
            speakers=tuple(str(s) for s in meta.get("speakers") or ()),
        )


@dataclass(frozen=True, slots=True)
class StmPolicy:
    """Lengths and lifetimes (SPEC §12)."""

    max_messages: int = 10
    max_summary_length: int = 1500
    max_message_length: int = 4000
    """Captured messages longer than this keep their start and a truncation marker."""
    ttl: timedelta = timedelta(hours=12)
    summary_ttl: timedelta = timedelta(hours=24)

    def is_expired(self, entry: StmEntry, now: datetime) -> bool:
        """Expired when idle longer than its TTL (the longer one once it has a summary)."""
        return now - entry.last_updated > (self.summary_ttl if entry.summary else self.ttl)


MAX_SPEAKERS = 1000
"""People an entry remembers as having spoken in it (the least recent are dropped)."""


def with_captured(
    entry: StmEntry, messages: Sequence[StmMessage], policy: StmPolicy, now: datetime
) -> StmEntry:
    """``entry`` with ``messages`` merged in: deduplicated, in time order, the last N kept.

    The summary is preserved; ``last_updated`` becomes ``now``.
    """
    seen = {(m.at, m.speaker, m.text) for m in entry.messages}
    merged = list(entry.messages)
    for message in (capped(m, policy.max_message_length) for m in messages):
        identity = (message.at, message.speaker, message.text)
        if identity not in seen:
            seen.add(identity)
            merged.append(message)
    merged.sort(key=lambda m: m.at)
    speakers = dict.fromkeys(entry.speakers)
    for message in messages:
        if message.user_id is not None:
            speakers.pop(message.user_id, None)
            speakers[message.user_id] = None  # newest last
    return replace(
        entry,
        messages=tuple(merged[-policy.max_messages :]),
        last_updated=now,
        speakers=tuple(speakers)[-MAX_SPEAKERS:],
    )


def capped(message: StmMessage, max_length: int) -> StmMessage:
    """``message`` with its text cut to ``max_length`` characters, marker included."""
    if len(message.text) <= max_length:
        return message
    marker = f" … [truncated: {len(message.text)} characters]"
    kept = message.text[: max(0, max_length - len(marker))]
    return replace(message, text=(kept + marker)[:max_length])


def with_summary(entry: StmEntry, summary: str, policy: StmPolicy, now: datetime) -> StmEntry:
    """``entry`` with ``summary`` (truncated silently), messages kept, ``last_updated`` = now."""
    return replace(entry, summary=summary[: policy.max_summary_length], last_updated=now)


def belongs_to(message: StmMessage, user_id: str, name_keys: frozenset[str]) -> bool:
    """Whether ``message`` is the person's: theirs or a reply to them.

    Messages captured before authorship was recorded fall back to the speaker's name
    (``name_keys`` holds the person's normalised names).
    """
    if message.user_id is not None:
        return message.user_id == user_id
    return message.role == "user" and normalise_name(message.speaker) in name_keys


def without_person(
    entry: StmEntry,
    user_id: str | None,
    name_keys: frozenset[str],
    fragments: frozenset[str] = frozenset(),
) -> tuple[StmEntry, int]:
    """``entry`` without the person's messages, and how many were removed.

    The bot's messages repeating an erased memory's ``fragments`` go as well, and the
    person from the entry's speakers. The summary goes too when anything was removed, the
    person spoke in the entry or the summary names them: it may retell what they said.
    """
    kept = tuple(
        m
        for m in entry.messages
        if not (user_id is not None and belongs_to(m, user_id, name_keys))
        and not (m.role == "assistant" and mentions(m.text, fragments))
    )
    removed = len(entry.messages) - len(kept)
    speakers = tuple(s for s in entry.speakers if s != user_id)
    spoke = len(speakers) < len(entry.speakers)
    summary = entry.summary
    if summary and (
        removed or spoke or names_person(summary, name_keys) or mentions(summary, fragments)
    ):
        summary = None
    if not removed and not spoke and summary == entry.summary:
        return entry, 0
    return replace(entry, messages=kept, summary=summary, speakers=speakers), removed
