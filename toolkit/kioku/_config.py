"""Settings read from the environment (SPEC §12)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

import platformdirs
from pydantic import AliasChoices, Field, SecretStr, ValidationError, field_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, SettingsConfigDict

from kioku._errors import ConfigurationError

PreparedStatements = Literal["auto", "on", "off"]
"""When kioku prepares its statements (``KIOKU_PREPARED_STATEMENTS``; see
:class:`KiokuSettings.prepared_statements`)."""

BLANK_MCP_TOKEN = (
    "KIOKU_MCP_TOKEN is blank, so no client could log in to `kioku mcp --http`: set it to a "
    "secret of 16 or more characters (python3 -c 'import secrets; "
    "print(secrets.token_urlsafe())'), or unset it to get a new token printed at each start"
)
PADDED_MCP_TOKEN = (
    "KIOKU_MCP_TOKEN starts or ends with whitespace, which no Authorization header carries, "
    "so no client could log in to `kioku mcp --http`: remove the whitespace"
)


def default_data_dir() -> Path:
    """Return the directory where the embedded database lives by default.

    Per user; ``/var/lib/kioku`` for root, whose home the unprivileged account running
    PostgreSQL cannot enter.
    """
    if os.name == "posix" and os.geteuid() == 0:
        return Path("/var/lib/kioku")
    return Path(platformdirs.user_data_dir("kioku", appauthor=False))


class KiokuSettings(BaseSettings):
    """Process-wide kioku settings.

    Every field reads the environment variable named in its alias; per-server
    settings (self-teaching, privacy options, limit overrides) live in the database.
    """

    # An empty variable (``KIOKU_EMBEDDINGS=`` in a compose file) counts as unset.
    model_config = SettingsConfigDict(
        frozen=True, populate_by_name=True, extra="ignore", env_ignore_empty=True
    )

    database_url: str | None = Field(
        default=None, validation_alias=AliasChoices("KIOKU_DATABASE_URL", "database_url")
    )
    """SQLAlchemy or libpq URL of a PostgreSQL server with pgvector; unset starts an
    embedded server in ``data_dir``."""

    data_dir: Path = Field(
        default_factory=default_data_dir,
        validation_alias=AliasChoices("KIOKU_DATA_DIR", "data_dir"),
    )
    """Directory holding the embedded server's data (reused across runs)."""

    embedded_user: str | None = Field(
        default=None,
        validation_alias=AliasChoices("KIOKU_EMBEDDED_USER", "embedded_user"),
    )
    """Account the embedded server runs as when kioku runs as root (PostgreSQL refuses
    root); unset uses the data directory's owner, else ``kioku-postgres`` (created once)."""

    max_server_memories: int = Field(
        default=100,
        ge=1,
        validation_alias=AliasChoices("MAX_SERVER_MEMORIES", "max_server_memories"),
    )
    """Server-wide memories allowed per (server, persona lineage)."""

    max_personal_memories: int = Field(
        default=100,
        ge=1,
        validation_alias=AliasChoices("MAX_PERSONAL_MEMORIES", "max_personal_memories"),
    )
    """Personal memories allowed per (user, persona lineage), global ones included."""

    max_memory_length: int = Field(
        default=1000, ge=1, validation_alias=AliasChoices("MAX_MEMORY_LENGTH", "max_memory_length")
    )
    """Longest memory text accepted, after trimming and sanitising."""

    stm_ttl_hours: float = Field(
        default=12,
        gt=0,
        validation_alias=AliasChoices("SHORT_TERM_MEMORY_TTL_HOURS", "stm_ttl_hours"),
    )
    """Short-term memory lifetime without a summary."""

    stm_summary_ttl_hours: float = Field(
        default=24,
        gt=0,
        validation_alias=AliasChoices(
            "SHORT_TERM_MEMORY_SUMMARY_TTL_HOURS", "stm_summary_ttl_hours"
        ),
    )
    """Short-term memory lifetime once a summary exists."""

    stm_max_summary_length: int = Field(
        default=1500,
        ge=1,
        validation_alias=AliasChoices(
            "SHORT_TERM_MEMORY_MAX_SUMMARY_LENGTH", "stm_max_summary_length"
        ),
    )
    """Summaries longer than this are truncated silently."""

    stm_max_messages_per_channel: int = Field(
        default=10,
        ge=1,
        validation_alias=AliasChoices(
            "SHORT_TERM_MEMORY_MAX_MESSAGES_PER_CHANNEL", "stm_max_messages_per_channel"
        ),
    )
    """Messages kept per short-term memory entry."""

    stm_max_message_length: int = Field(
        default=4000,
        ge=100,
        validation_alias=AliasChoices(
            "SHORT_TERM_MEMORY_MAX_MESSAGE_LENGTH", "stm_max_message_length"
        ),
    )
    """Captured messages are cut to this many characters (with a truncation marker)."""

    stm_min_messages_for_summary: int = Field(
        default=6,
        ge=1,
        validation_alias=AliasChoices(
            "SHORT_TERM_MEMORY_MIN_MESSAGES_FOR_SUMMARY", "stm_min_messages_for_summary"
        ),
    )
    """Messages a channel needs before the model is asked to write a summary."""

    stm_retention_days: float = Field(
        default=7,
        gt=0,
        validation_alias=AliasChoices("SHORT_TERM_MEMORY_RETENTION_DAYS", "stm_retention_days"),
    )
    """Short-term memory threads idle this long are deleted by the sweeper."""

    thread_max_messages: int = Field(
        default=20,
        ge=1,
        validation_alias=AliasChoices("KIOKU_THREAD_MAX_MESSAGES", "thread_max_messages"),
    )
    """Messages a conversation thread of the per-turn graph keeps once a turn is captured
    (the oldest whole turns are removed; the latest turn is always kept whole)."""

    history_retention_days: float = Field(
        default=365,
        gt=0,
        validation_alias=AliasChoices("KIOKU_HISTORY_RETENTION_DAYS", "history_retention_days"),
    )
    """Memory history rows older than this are deleted by the sweeper."""

    sweep_interval_minutes: float = Field(
        default=60,
        ge=0,
        validation_alias=AliasChoices("KIOKU_SWEEP_INTERVAL_MINUTES", "sweep_interval_minutes"),
    )
    """How often long-lived processes (the graph, the MCP server) run the sweeper; ``0``
    turns the timer off (run ``kioku sweep`` yourself then)."""

    embeddings: str = Field(
        default="auto", validation_alias=AliasChoices("KIOKU_EMBEDDINGS", "embeddings")
    )
    """Embedder: ``auto`` (default: ``openai`` with ``OPENAI_API_KEY``, else ``multilingual``
    or ``local`` when installed, else ``hashing`` with a warning), ``hashing`` (deterministic,
    lexical), ``openai``, ``multilingual`` (multilingual-e5-small) or ``local`` (MiniLM)."""

    embedding_dimension: int = Field(
        default=384,
        ge=8,
        le=4096,
        validation_alias=AliasChoices("KIOKU_EMBEDDING_DIMENSION", "embedding_dimension"),
    )
    """Vector size of the hashing embedder (the others have their own)."""

    duplicate_similarity: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        validation_alias=AliasChoices("KIOKU_DUPLICATE_SIMILARITY", "duplicate_similarity"),
    )
    """Cosine similarity from which a new memory repeats one in its scope (and is refused
    as ``memory_save_failed_duplicate`` unless its words tell them apart); unset, the
    embedder's calibrated value (``kioku._calibration``); ``1`` refuses only identical ones."""

    relevance_similarity: float | None = Field(
        default=None,
        ge=-1.0,
        le=1.0,
        validation_alias=AliasChoices("KIOKU_RELEVANCE_SIMILARITY", "relevance_similarity"),
    )
    """Cosine similarity a memory needs, when no text match supports it, to count as related
    to a search; below it for every memory, search answers ``no_memories_found``. Unset,
    the embedder's calibrated value; ``-1`` turns the floor off."""

    statement_timeout_ms: int = Field(
        default=10_000,
        ge=0,
        validation_alias=AliasChoices("KIOKU_STATEMENT_TIMEOUT_MS", "statement_timeout_ms"),
    )
    """Database statements running longer are cancelled (the tool reports a database
    error); ``0`` disables the limit. Schema setup is never limited."""

    prepared_statements: PreparedStatements = Field(
        default="auto",
        validation_alias=AliasChoices("KIOKU_PREPARED_STATEMENTS", "prepared_statements"),
    )
    """``auto`` prepares statements on connections that reach PostgreSQL directly (none
    through a pooler, a proxy or a port mapping: docs/deployment.md); ``on`` always, for a
    direct connection ``auto`` cannot recognise or a pooler that carries prepared
    statements (PgBouncer >= 1.21 with ``max_prepared_statements``); ``off`` never."""

    vector_index: Literal["auto", "hnsw", "exact"] = Field(
        default="auto", validation_alias=AliasChoices("KIOKU_VECTOR_INDEX", "vector_index")
    )
    """``hnsw`` builds HNSW indexes (one per scope kind) for scopes too large to search
    exactly; ``exact`` does without (and drops them); ``auto`` builds them when the memory
    limits (these, or a server's own) allow such scopes, and never drops one. Server-wide
    memories alone get one while the personal limits keep 20 people's memories within
    exact search (``kioku._db.vectors.hnsw_wanted``)."""

    @property
    def memory_limits(self) -> tuple[int, int]:
        """The server-wide and the personal memory limit, in that order."""
        return self.max_server_memories, self.max_personal_memories

    def wants_hnsw_index(self, exact_max_rows: int) -> bool | None:
        """Whether setup should build (``True``) or drop (``False``) the HNSW index.

        ``None``: these limits do not need it, but a server's own may, and one built
        earlier is kept (``auto`` never drops it: a command run without the application's
        limits must not undo its index).
        """
        if self.vector_index != "auto":
            return self.vector_index == "hnsw"
        largest = max(self.max_server_memories, self.max_personal_memories)
        return True if largest > exact_max_rows else None

    stm_max_other_channels: int = Field(
        default=3,
        ge=0,
        validation_alias=AliasChoices(
            "SHORT_TERM_MEMORY_MAX_OTHER_CHANNELS", "stm_max_other_channels"
        ),
    )
    """Other-channel short-term memories rendered at most."""

    mcp_token: SecretStr | None = Field(
        default=None,
        min_length=16,
        validation_alias=AliasChoices("KIOKU_MCP_TOKEN", "mcp_token"),
    )
    """Bearer token ``kioku mcp --http`` requires of every request (at least 16
    characters, no surrounding whitespace); unset, a random one is generated at each start
    and printed once. Blank (empty or whitespace) is a configuration error."""

    @field_validator("mcp_token", mode="before")
    @classmethod
    def _token_a_client_can_send(cls, token: object) -> object:
        """Refuse a token no ``Authorization`` header can carry (before its length is checked)."""
        value = token.get_secret_value() if isinstance(token, SecretStr) else token
        if isinstance(value, str) and not value.strip():
            raise ValueError(BLANK_MCP_TOKEN)
        if isinstance(value, str) and value != value.strip():
            raise ValueError(PADDED_MCP_TOKEN)
        return token


def load_settings(**overrides: object) -> KiokuSettings:
    """Read settings from the environment, applying keyword overrides.

    Raises:
        ConfigurationError: naming the variable whose value is malformed.
    """
    # An empty variable counts as unset for every other setting; an empty token is a
    # mistake (a secret reference that resolved to nothing), not a wish for a random one.
    if "mcp_token" not in overrides and os.environ.get("KIOKU_MCP_TOKEN", "x").strip() == "":
        raise ConfigurationError(BLANK_MCP_TOKEN)
    try:
        return KiokuSettings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            field = str(error["loc"][0]) if error["loc"] else "?"
            info = _field(field)
            name = field
            if info is not None and isinstance(info.validation_alias, AliasChoices):
                name = str(info.validation_alias.choices[0])
            got = "hidden" if info is not None and _is_secret(info) else repr(error.get("input"))
            problems.append(f"{name}: {error['msg']} (got {got})")
        raise ConfigurationError(
            "Invalid kioku configuration; fix these environment variables: " + "; ".join(problems)
        ) from exc


def _field(name: str) -> FieldInfo | None:
    """The settings field called ``name``, or read from the variable ``name``."""
    for field, info in KiokuSettings.model_fields.items():
        alias = info.validation_alias
        if field == name or (isinstance(alias, AliasChoices) and name in alias.choices):
            return info
    return None


def _is_secret(info: FieldInfo) -> bool:
    """Whether the field holds a secret, whose value an error must not repeat."""
    return info.annotation is SecretStr or SecretStr in getattr(info.annotation, "__args__", ())
