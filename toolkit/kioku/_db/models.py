"""SQLAlchemy models for kioku's long-term memory (SPEC §2)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pgvector.sqlalchemy import HALFVEC
from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Computed,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    Sequence,
    SmallInteger,
    Text,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, TSVECTOR
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from kioku._db.text_search import SEARCH_VECTOR

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

LINEAGE_SEQUENCE = Sequence("persona_lineage_seq", start=10000, metadata=None)


class Base(DeclarativeBase):
    """Declarative base with deterministic constraint names."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)


LINEAGE_SEQUENCE.metadata = Base.metadata


class Server(Base):
    """A shared space (or a DM conversation key) and its memory settings."""

    __tablename__ = "servers"

    id: Mapped[str] = mapped_column(Text, primary_key=True)
    name: Mapped[str | None] = mapped_column(Text)
    self_teaching_enabled: Mapped[bool] = mapped_column(
        Boolean, default=False, server_default=text("false")
    )
    personal_memories_enabled: Mapped[bool] = mapped_column(
        Boolean, default=True, server_default=text("true")
    )
    private_channel_ids: Mapped[list[str]] = mapped_column(
        ARRAY(Text), default=list, server_default=text("'{}'")
    )
    stm_privacy_bypass: Mapped[bool] = mapped_column(
        Boolean, default=False, server_default=text("false")
    )
    max_server_memories: Mapped[int | None] = mapped_column(Integer)
    max_personal_memories: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


class User(Base):
    """A human participant (or the bot), keyed by its external id."""

    __tablename__ = "users"

    id: Mapped[str] = mapped_column(Text, primary_key=True)
    display_name: Mapped[str] = mapped_column(Text)
    global_name: Mapped[str | None] = mapped_column(Text)
    username: Mapped[str | None] = mapped_column(Text)
    display_name_key: Mapped[str | None] = mapped_column(Text)
    """``display_name`` normalised for matching (``kioku._memory.text.normalise_name``)."""
    global_name_key: Mapped[str | None] = mapped_column(Text)
    username_key: Mapped[str | None] = mapped_column(Text)
    aliases: Mapped[list[str]] = mapped_column(
        ARRAY(Text), default=list, server_default=text("'{}'")
    )
    privacy_level: Mapped[int] = mapped_column(SmallInteger, default=0, server_default=text("0"))
    is_bridge: Mapped[bool] = mapped_column(Boolean, default=False, server_default=text("false"))
    cross_server_stm: Mapped[bool] = mapped_column(
        Boolean, default=False, server_default=text("false")
    )
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())

    __table_args__ = (CheckConstraint("privacy_level IN (0, 1, 2)", name="privacy_level"),)


class ServerMember(Base):
    """Membership of a user in a server, with the nickname saved there."""

    __tablename__ = "server_members"

    server_id: Mapped[str] = mapped_column(
        ForeignKey("servers.id", ondelete="CASCADE"), primary_key=True
    )
    user_id: Mapped[str] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), primary_key=True
    )
    nickname: Mapped[str | None] = mapped_column(Text)
    nickname_key: Mapped[str | None] = mapped_column(Text)
    """``nickname`` normalised for matching."""

    __table_args__ = (Index("ix_server_members_user_id", "user_id"),)


class PersonaRow(Base):
    """A persona the bot plays; its lineage survives re-creation."""

    __tablename__ = "personas"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    server_id: Mapped[str | None] = mapped_column(ForeignKey("servers.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(Text)
    lineage_id: Mapped[int] = mapped_column(
        BigInteger, LINEAGE_SEQUENCE, server_default=LINEAGE_SEQUENCE.next_value()
    )
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())

    __table_args__ = (CheckConstraint("lineage_id >= 10000", name="lineage_range"),)


class Memory(Base):
    """One long-term memory; server-wide and personal share one id space."""

    __tablename__ = "memories"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    scope: Mapped[str] = mapped_column(Text)
    server_id: Mapped[str | None] = mapped_column(ForeignKey("servers.id", ondelete="CASCADE"))
    user_id: Mapped[str | None] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    persona_lineage_id: Mapped[int] = mapped_column(BigInteger)
    persona_id: Mapped[int | None] = mapped_column(Integer)
    created_by: Mapped[str | None] = mapped_column(Text)
    content: Mapped[str] = mapped_column(Text)
    memory_type: Mapped[str] = mapped_column(Text, default="semantic", server_default="semantic")
    importance: Mapped[float] = mapped_column(Float, default=0.5, server_default=text("0.5"))
    decay_rate: Mapped[float] = mapped_column(Float, default=0.01, server_default=text("0.01"))
    attributes: Mapped[dict[str, Any]] = mapped_column(
        JSONB, default=dict, server_default=text("'{}'::jsonb")
    )
    embedding: Mapped[Any | None] = mapped_column(HALFVEC(), nullable=True)
    """Half precision (ample for normalised embeddings, half the bytes to scan); the
    dimension is fixed at setup from the configured embedder (see ``db/vectors.py``)."""
    needs_embedding: Mapped[bool] = mapped_column(
        Boolean, default=False, server_default=text("false")
    )
    """Saved while the embedder failed; ``kioku reembed`` fills the vector in later."""
    embedded_with: Mapped[str | None] = mapped_column(Text, nullable=True)
    """The model that made ``embedding`` (migration 0023): a vector is current only while
    this is the model ``kioku_meta`` records (``NULL``: not known, re-embedded by the next
    ``kioku reembed``)."""
    search_vector: Mapped[Any] = mapped_column(TSVECTOR, Computed(SEARCH_VECTOR, persisted=True))
    status: Mapped[str] = mapped_column(Text, default="active", server_default="active")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    event_time: Mapped[datetime | None] = mapped_column(
        DateTime(timezone=True), Computed("kioku_event_time(attributes)", persisted=True)
    )
    """When what the memory records happened (``attributes.event_time``; migration 0011);
    ``None``: when it was saved."""
    happened_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True),
        Computed("coalesce(kioku_event_time(attributes), created_at)", persisted=True),
    )
    """When what the memory records happened: its event time, else when it was saved
    (migration 0012). The one definition: readers and search filters use this column."""

    __table_args__ = (
        CheckConstraint("scope IN ('server', 'personal')", name="scope"),
        CheckConstraint(
            "(scope = 'server' AND server_id IS NOT NULL)"
            " OR (scope = 'personal' AND user_id IS NOT NULL)",
            name="scope_owner",
        ),
        CheckConstraint(
            "memory_type IN ('episodic', 'semantic', 'procedural', 'strategic')",
            name="memory_type",
        ),
        CheckConstraint("importance >= 0 AND importance <= 1", name="importance_range"),
        CheckConstraint("decay_rate >= 0", name="decay_rate_range"),
        CheckConstraint("status IN ('active', 'archived')", name="status"),
        Index(
            "ix_memories_server_scope",
            "server_id",
            "persona_lineage_id",
            postgresql_where=text("scope = 'server'"),
        ),
        Index(
            "ix_memories_personal_scope",
            "user_id",
            "persona_lineage_id",
            postgresql_where=text("scope = 'personal'"),
        ),
        Index(
            "ix_memories_search_vector",
            "search_vector",
            postgresql_using="gin",
            postgresql_with={"fastupdate": "off"},
        ),
        Index("ix_memories_needs_embedding", "id", postgresql_where=text("needs_embedding")),
    )


class MemoryAccess(Base):
    """How often a memory was returned or rendered (batched by ``search/access.py``).

    Kept apart from ``memories`` so counting never locks or rewrites memory rows.
    """

    __tablename__ = "memory_access"

    memory_id: Mapped[int] = mapped_column(
        BigInteger, ForeignKey("memories.id", ondelete="CASCADE"), primary_key=True
    )
    access_count: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))
    last_accessed: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class MemoryCount(Base):
    """Active memories per scope key, kept by triggers on ``memories`` (migration 0005).

    The limit check reads one row here instead of counting the scope, so a write costs
    the same in a scope of ten memories or of a million.
    """

    __tablename__ = "memory_counts"

    scope: Mapped[str] = mapped_column(Text, primary_key=True)
    owner_id: Mapped[str] = mapped_column(Text, primary_key=True)
    """``server_id`` of a server memory, ``user_id`` of a personal one."""
    persona_lineage_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    active: Mapped[int] = mapped_column(BigInteger, default=0, server_default=text("0"))
    version: Mapped[int | None] = mapped_column(BigInteger, server_default=text("0"))
    """Changes with every write to the scope (one sequence): cached copies compare it."""


class MemoryHistory(Base):
    """Log of every change to a memory, written by a trigger on ``memories``.

    Erasing a person (or history past its retention) clears the text and keeps a
    tombstone: who changed which memory, when, and how.
    """

    __tablename__ = "memory_history"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    memory_id: Mapped[int] = mapped_column(BigInteger)
    action: Mapped[str] = mapped_column(Text)
    old_content: Mapped[str | None] = mapped_column(Text)
    new_content: Mapped[str | None] = mapped_column(Text)
    actor_user_id: Mapped[str | None] = mapped_column(Text)
    persona_id: Mapped[int | None] = mapped_column(Integer)
    scope: Mapped[str | None] = mapped_column(Text)
    owner_id: Mapped[str | None] = mapped_column(Text)
    """Whose memory it was: the server key or the user (``None`` for rows older than 0006
    whose memory was already gone)."""
    persona_lineage_id: Mapped[int | None] = mapped_column(BigInteger)
    erased_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    """When the text was erased (the row is then a tombstone)."""
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())

    __table_args__ = (
        CheckConstraint("action IN ('create', 'update', 'delete')", name="action"),
        Index("ix_memory_history_memory_id", "memory_id"),
        Index("ix_memory_history_owner", "owner_id", "scope"),
        Index("ix_memory_history_created_at", "created_at"),
    )


class MemorySubject(Base):
    """The bridged user a server-wide memory is about (migration 0021).

    A personal fact about a bridged user is saved server-wide under their display name;
    this row says whose it is, so erasing that user removes the memory and scrubs its
    history. No foreign key: it outlives a deleted memory, whose history still holds text.
    """

    __tablename__ = "memory_subjects"

    memory_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    user_id: Mapped[str] = mapped_column(Text, primary_key=True, index=True)
    server_id: Mapped[str] = mapped_column(Text, index=True)
    """The server key the memory was saved under (erasing the server removes the row)."""


class LangGraphItem(Base):
    """An item of ``kioku.KiokuLangGraphStore``: its address and value (migration 0022).

    The item's searchable text, scope and history are those of its memory; deleting the
    memory deletes the item.
    """

    __tablename__ = "langgraph_items"

    namespace: Mapped[list[str]] = mapped_column(ARRAY(Text), primary_key=True)
    key: Mapped[str] = mapped_column(Text, primary_key=True)
    memory_id: Mapped[int] = mapped_column(
        BigInteger, ForeignKey("memories.id", ondelete="CASCADE"), unique=True, index=True
    )
    value: Mapped[dict[str, Any]] = mapped_column(JSONB)
    indexed: Mapped[bool] = mapped_column(Boolean, default=True, server_default=text("true"))
    """Searched by a query (``put(index=False)``: only listed and filtered)."""
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    updated_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), index=True
    )

    __table_args__ = (CheckConstraint("cardinality(namespace) >= 1", name="namespace"),)


class StmThread(Base):
    """Short-term-memory entries: one row each, its state in ``entry`` (migration 0018).

    Other-channel look-ups read the index columns; an entry's state is loaded only when
    this process has not seen its version (``last_updated``) yet.
    """

    __tablename__ = "stm_threads"

    thread_id: Mapped[str] = mapped_column(Text, primary_key=True)
    kind: Mapped[str] = mapped_column(Text)
    owner_id: Mapped[str] = mapped_column(Text)
    channel_id: Mapped[str] = mapped_column(Text)
    lineage_id: Mapped[int] = mapped_column(BigInteger)
    server_id: Mapped[str | None] = mapped_column(Text)
    parent_channel_id: Mapped[str | None] = mapped_column(Text)
    has_summary: Mapped[bool] = mapped_column(Boolean, default=False, server_default=text("false"))
    last_updated: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    private: Mapped[bool] = mapped_column(Boolean, default=False, server_default=text("false"))
    """Written in a channel its turn called private (migration 0015)."""
    entry: Mapped[dict[str, Any]] = mapped_column(JSONB)
    """The entry's state (:meth:`kioku.StmEntry.to_state`)."""

    __table_args__ = (
        CheckConstraint("kind IN ('server', 'user')", name="kind"),
        Index(
            "ix_stm_threads_owner_recent",
            "kind",
            "owner_id",
            "lineage_id",
            text("last_updated DESC"),
        ),
        Index("ix_stm_threads_last_updated", "last_updated"),
        Index(
            "ix_stm_threads_private_channels",
            "owner_id",
            "channel_id",
            postgresql_where=text("kind = 'server' AND private"),
        ),
    )


class KiokuMeta(Base):
    """Facts about this database, e.g. which embedding model wrote its vectors."""

    __tablename__ = "kioku_meta"

    key: Mapped[str] = mapped_column(Text, primary_key=True)
    value: Mapped[str] = mapped_column(Text)
