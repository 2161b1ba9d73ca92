"""The turn context: who is talking, where, and as which persona (SPEC §1).

Passed to the graph as its ``context_schema`` and read by tools through LangGraph's
``ToolRuntime``; never stored in globals.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import IntEnum
from typing import Annotated, Any, Protocol, runtime_checkable

from kioku import _context_checks as checks
from kioku._memory.notices import MemoryNotice
from kioku._memory.when import in_utc

GLOBAL_LINEAGE = 0
"""Personal memories with this lineage are visible to every persona."""

NO_STM_PROVIDERS: frozenset[str] = frozenset({"novelai"})
"""Providers whose models cannot use the short-term-memory tool."""


class _NotInSchema:
    """``Annotated`` marker: pydantic leaves the field out of JSON schemas.

    LangGraph derives the form LangGraph Studio shows from the context's JSON schema; a
    callback has none, and without this marker the whole schema would be missing.
    """

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: Any) -> Any:
        from pydantic_core import PydanticOmit

        raise PydanticOmit


NOT_IN_SCHEMA = _NotInSchema()

USER_SPACE_PREFIX = "user-space:"
"""Server keys of the memory spaces :meth:`TurnContext.for_user` gives each user."""


def user_space(user_id: str) -> str:
    """The memory space of ``user_id`` in apps that use :meth:`TurnContext.for_user`.

    One space per user: its server-wide memories and its conversations (recalled in the
    user's other threads) are that user's alone, so two users of the same app never see
    each other's. The model may save memories there until settings are stored for it.
    """
    return USER_SPACE_PREFIX + user_id


def check_user_space(server_id: str | None, user_id: str) -> None:
    """Refuse a turn of ``user_id`` in another user's own space (:func:`user_space`).

    Raises:
        ConfigurationError: when ``server_id`` is a user space but not ``user_id``'s.
    """
    if (
        server_id is not None
        and server_id.startswith(USER_SPACE_PREFIX)
        and server_id != user_space(user_id)
    ):
        from kioku._errors import ConfigurationError

        raise ConfigurationError(
            f"server ids starting with {USER_SPACE_PREFIX!r} are users' own memory spaces "
            "(TurnContext.for_user), open only to their user's turns; give this server "
            "another id"
        )


DEFAULT_BOT_USER_ID = "kioku"
"""The assistant's own user id in :meth:`TurnContext.for_user` contexts."""


class PrivacyLevel(IntEnum):
    """How much of a user kioku may remember."""

    MINIMAL = 0
    """Full personalisation."""
    PARTIAL = 1
    """Messages visible, but no personal memories."""
    FULL = 2
    """Invisible: no memories, messages not captured."""

    @property
    def allows_personal_memories(self) -> bool:
        """Whether personal memories of someone at this level may be kept and shown."""
        return self is PrivacyLevel.MINIMAL


@dataclass(frozen=True, slots=True)
class Participant:
    """A person taking part in the conversation."""

    user_id: str
    """External user id (platform-neutral string)."""
    display_name: str
    """The name shown in the conversation."""
    aliases: tuple[str, ...] = ()
    """Other names the person goes by (nicknames, usernames)."""
    privacy: PrivacyLevel = PrivacyLevel.MINIMAL
    """The person's privacy level."""
    is_bridge: bool = False
    """Relayed from another network: only server-wide memories may mention them."""

    def __post_init__(self) -> None:
        checks.text("Participant", "user_id", self.user_id)
        checks.text("Participant", "display_name", self.display_name)
        object.__setattr__(self, "aliases", checks.names("Participant", "aliases", self.aliases))
        object.__setattr__(self, "privacy", privacy_level(self.privacy))
        checks.flag("Participant", "is_bridge", self.is_bridge)

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> Participant:
        """Build from JSON-like data (``privacy`` as 0/1/2 or a level name).

        Raises:
            ConfigurationError: a field is missing or of the wrong kind.
        """
        return Participant(
            user_id=str(data["user_id"]),
            display_name=str(data["display_name"]),
            aliases=data.get("aliases", ()),
            privacy=data.get("privacy", PrivacyLevel.MINIMAL),
            is_bridge=bool(data.get("is_bridge", False)),
        )


def privacy_level(value: object) -> PrivacyLevel:
    """``value`` (a level, 0/1/2 or a level's name) as a :class:`PrivacyLevel`.

    Raises:
        ConfigurationError: for anything else.
    """
    if isinstance(value, str) and value.upper() in PrivacyLevel.__members__:
        return PrivacyLevel[value.upper()]
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 2:
        return PrivacyLevel(value)
    from kioku._errors import ConfigurationError

    raise ConfigurationError(
        "Participant: privacy must be a PrivacyLevel (MINIMAL, PARTIAL or FULL, or 0/1/2), "
        f"not {value!r:.40}"
    )


@dataclass(frozen=True, slots=True)
class Persona:
    """The character the bot plays in this conversation."""

    persona_id: int
    """Persona id (attribution only)."""
    name: str
    """Name used for ``{bot}`` when memories are rendered."""
    lineage_id: int
    """Lineage (≥ 10000) that scopes memories; 0 means an un-migrated database."""

    def __post_init__(self) -> None:
        checks.integer("Persona", "persona_id", self.persona_id)
        checks.text("Persona", "name", self.name)
        checks.integer("Persona", "lineage_id", self.lineage_id)


DEFAULT_PERSONA = Persona(persona_id=0, name="Assistant", lineage_id=10000)
"""The assistant of :meth:`TurnContext.for_user` contexts."""


SENT_AT = "kioku_sent_at"
"""``additional_kwargs`` key of a message holding when it was sent (ISO 8601)."""


def sent_at_of(message: object) -> datetime | None:
    """When ``message`` was sent (UTC), if it says so in a readable :data:`SENT_AT`."""
    raw = (getattr(message, "additional_kwargs", None) or {}).get(SENT_AT)
    try:
        return in_utc(datetime.fromisoformat(raw)) if isinstance(raw, str) else None
    except ValueError:
        return None


def latest_sent_at(messages: Sequence[object]) -> datetime | None:
    """When the latest human message of ``messages`` was sent, if it says (:data:`SENT_AT`)."""
    for message in reversed(messages):
        if getattr(message, "type", None) == "human":
            return sent_at_of(message)
    return None


@dataclass(frozen=True, slots=True)
class TurnContext:
    """Everything a memory tool needs to know about the current turn."""

    channel_id: str
    """Channel (conversation stream) id."""
    user: Participant
    """The person whose message triggered this turn."""
    persona: Persona
    """The active persona."""
    bot_user_id: str
    """The bot's own external user id."""
    server_id: str | None = None
    """Server id, or ``None`` in a direct-message conversation."""
    server_name: str | None = None
    """Server name used in rendered headers."""
    channel_name: str | None = None
    """Channel name used in rendered short-term memories."""
    parent_channel_id: str | None = None
    """Parent channel when this channel is a thread."""
    is_private_channel: bool = False
    """Whether this channel is private."""
    participants: tuple[Participant, ...] = ()
    """People in the conversation (the triggering user is added if missing)."""
    provider: str = "openai"
    """Chat-model provider of this turn."""
    has_tools: bool = True
    """``False`` means no tools are offered at all."""
    notifier: Annotated[Callable[[MemoryNotice], object] | None, NOT_IN_SCHEMA] = field(
        default=None, compare=False
    )
    """Optional callback receiving every long-term-memory notice."""
    turn_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    """Identifies the turn (one per context object); per-turn limits are keyed on it."""
    message_time: datetime | None = None
    """When the message that started the turn was sent (naive means UTC). A memory saved
    this turn without an ``event_time`` of its own happened then; without one, when it is
    saved. kioku's tools take it from the latest human message's
    ``additional_kwargs["kioku_sent_at"]`` (ISO 8601) when it is not set here."""

    def message_time_utc(self) -> datetime | None:
        """:attr:`message_time` as an aware UTC datetime (``None`` when unknown)."""
        return in_utc(self.message_time) if self.message_time is not None else None

    @classmethod
    def for_user(
        cls,
        user_id: str,
        *,
        thread_id: str,
        display_name: str | None = None,
        server_id: str | None = None,
        persona: Persona | None = None,
        **fields: Any,
    ) -> TurnContext:
        """The context of a one-user app: a user id and a conversation (thread) id.

        Args:
            user_id: the user's id; their personal memories follow them across threads.
            thread_id: the conversation; its short-term memory is kept per thread.
            display_name: the name memories use for the user (``user_id`` by default).
            server_id: the memory space; by default the user's own (:func:`user_space`),
                where the model may save memories until ``accounts.upsert_server`` stores
                other settings. Pass a shared server id only for users who may see each
                other's server-wide memories and conversations.
            persona: the assistant (:data:`DEFAULT_PERSONA`, lineage 10000 — the lineage
                of the first persona ``accounts.create_persona`` makes, so it keeps these
                memories).
            **fields: any other ``TurnContext`` field (``provider``, ``notifier``, …).
        """
        user = Participant(user_id, display_name or user_id)
        return cls(
            channel_id=thread_id,
            user=user,
            persona=persona or DEFAULT_PERSONA,
            bot_user_id=fields.pop("bot_user_id", DEFAULT_BOT_USER_ID),
            server_id=server_id or user_space(user_id),
            participants=fields.pop("participants", (user,)),
            **fields,
        )

    def __post_init__(self) -> None:
        # LangGraph builds the context from a dict when a run comes over the API
        # (LangGraph Studio, langgraph_sdk): accept nested dicts and lists there too.
        owner = "TurnContext"
        user = checks.built(
            owner, "user", self.user, Participant, Participant.from_dict, checks.PARTICIPANT_FORM
        )
        object.__setattr__(self, "user", user)
        persona = checks.built(
            owner, "persona", self.persona, Persona, lambda d: Persona(**d), checks.PERSONA_FORM
        )
        object.__setattr__(self, "persona", persona)
        people = checks.each_built(
            owner,
            "participants",
            self.participants,
            Participant,
            Participant.from_dict,
            checks.PARTICIPANT_FORM,
        )
        object.__setattr__(self, "participants", people)
        for name in ("channel_id", "bot_user_id", "provider", "turn_id"):
            checks.text(owner, name, getattr(self, name))
        for name in ("server_id", "server_name", "channel_name", "parent_channel_id"):
            checks.text(owner, name, getattr(self, name), optional=True)
        checks.flag(owner, "is_private_channel", self.is_private_channel)
        checks.flag(owner, "has_tools", self.has_tools)
        checks.callback(owner, "notifier", self.notifier)
        if self.message_time is not None:
            object.__setattr__(self, "message_time", checks.message_time(self.message_time))
        check_user_space(self.server_id, self.user.user_id)

    @property
    def is_dm(self) -> bool:
        """Whether this turn is a direct-message conversation."""
        return self.server_id is None

    @property
    def memory_server_key(self) -> str:
        """Key that scopes server-wide memories; a DM gets its own per-DM key."""
        if self.server_id is None:
            return dm_server_key(self.channel_id)
        return server_key(self.server_id)

    def all_participants(self) -> tuple[Participant, ...]:
        """Participants with the triggering user included exactly once."""
        if any(p.user_id == self.user.user_id for p in self.participants):
            return self.participants
        return (self.user, *self.participants)


DM_KEY_PREFIX = "dm:"
"""Keys of direct-message conversations start with this; no server's key does."""
_ESCAPED_SERVER = "kioku-server:"


def dm_server_key(channel_id: str) -> str:
    """Server key under which a direct-message conversation keeps its memories."""
    return DM_KEY_PREFIX + channel_id


def server_key(server_id: str) -> str:
    """The key a server's memories, settings and members are stored under.

    Its id, unless the id could be mistaken for a direct-message key (or an escaped id):
    those are prefixed, so a server called ``dm:c42`` never reaches the memories of the
    direct-message conversation in channel ``c42``. Injective by construction.
    """
    if server_id.startswith((DM_KEY_PREFIX, _ESCAPED_SERVER)):
        return _ESCAPED_SERVER + server_id
    return server_id


@runtime_checkable
class ContextSource(Protocol):
    """A graph context that stands for a :class:`TurnContext` (e.g. :class:`AppContext`)."""

    def as_turn_context(self) -> TurnContext:
        """The turn context (the same object on every call: per-turn limits key on it)."""
        ...


def turn_context_of(value: object) -> TurnContext | None:
    """The :class:`TurnContext` a graph's runtime context stands for, or ``None``."""
    if isinstance(value, TurnContext):
        return value
    if isinstance(value, ContextSource):
        return value.as_turn_context()
    return None


def require_turn_context(value: object) -> TurnContext:
    """:func:`turn_context_of` ``value``, for graph nodes and middleware hooks.

    Raises:
        ConfigurationError: the run has no context kioku can use; says how to give one.
    """
    context = turn_context_of(value)
    if context is None:
        from kioku._errors import ConfigurationError

        raise ConfigurationError(
            "kioku needs a TurnContext: compile the graph or agent with "
            "context_schema=TurnContext (or AppContext) and run it with "
            f"context=TurnContext(...) or TurnContext.for_user(...) (got {type(value).__name__})"
        )
    return context
