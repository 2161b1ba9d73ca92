"""Servers, users, members and personas: the repository for kioku's directory tables."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy import func, literal_column, or_, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from toolkit.context import Persona, PrivacyLevel
from toolkit.db.models import PersonaRow, Server, ServerMember, User
from toolkit.memory.resolution import DirectoryMember


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """Per-server memory settings (SPEC §12), with defaults for servers without a row."""

    self_teaching_enabled: bool = False
    """Whether the model may write long-term memories here."""
    personal_memories_enabled: bool = True
    """Whether personal memories are rendered and mentioned here."""
    private_channel_ids: frozenset[str] = field(default_factory=frozenset)
    """Channels whose short-term memory is never recalled elsewhere."""
    stm_privacy_bypass: bool = False
    """Recall private channels' short-term memory anyway."""
    max_server_memories: int | None = None
    """Override of ``MAX_SERVER_MEMORIES`` for this server."""
    max_personal_memories: int | None = None
    """Override of ``MAX_PERSONAL_MEMORIES`` for this server."""


DM_SETTINGS = ServerSettings(self_teaching_enabled=True)
"""Defaults for a direct-message conversation: only its one user is affected."""


class AccountRepository:
    """Reads and writes servers, users, members and personas in the caller's session."""

    def __init__(self, session: Session) -> None:
        """Work inside ``session``; the caller commits."""
        self.session = session

    def server_settings(self, server_key: str, *, is_dm: bool) -> ServerSettings:
        """Settings of ``server_key``, or the defaults when it has no row yet."""
        row = self.session.get(Server, server_key)
        if row is None:
            return DM_SETTINGS if is_dm else ServerSettings()
        return ServerSettings(
            self_teaching_enabled=row.self_teaching_enabled,
            personal_memories_enabled=row.personal_memories_enabled,
            private_channel_ids=frozenset(row.private_channel_ids or ()),
            stm_privacy_bypass=row.stm_privacy_bypass,
            max_server_memories=row.max_server_memories,
            max_personal_memories=row.max_personal_memories,
        )

    def upsert_server(self, server_id: str, name: str | None = None, **settings: object) -> None:
        """Create or update a server and any of its settings (column names as keywords)."""
        values: dict[str, object] = {"id": server_id, "name": name, **settings}
        update = {k: v for k, v in values.items() if k != "id" and (k != "name" or v is not None)}
        statement = insert(Server).values(**values)
        self.session.execute(
            statement.on_conflict_do_update(index_elements=[Server.id], set_=update)
            if update
            else statement.on_conflict_do_nothing()
        )

    def upsert_user(
        self,
        user_id: str,
        display_name: str,
        *,
        global_name: str | None = None,
        username: str | None = None,
        aliases: Sequence[str] = (),
        privacy: PrivacyLevel = PrivacyLevel.MINIMAL,
        is_bridge: bool = False,
        cross_server_stm: bool = False,
    ) -> None:
        """Create or replace a user's directory entry."""
        values = {
            "id": user_id,
            "display_name": display_name,
            "global_name": global_name,
            "username": username,
            "aliases": list(aliases),
            "privacy_level": int(privacy),
            "is_bridge": is_bridge,
            "cross_server_stm": cross_server_stm,
        }
        statement = insert(User).values(**values)
        self.session.execute(
            statement.on_conflict_do_update(
                index_elements=[User.id], set_={k: v for k, v in values.items() if k != "id"}
            )
        )

    def add_member(self, server_id: str, user_id: str, nickname: str | None = None) -> None:
        """Record that ``user_id`` belongs to ``server_id`` (with an optional nickname)."""
        statement = insert(ServerMember).values(
            server_id=server_id, user_id=user_id, nickname=nickname
        )
        self.session.execute(
            statement.on_conflict_do_update(
                index_elements=[ServerMember.server_id, ServerMember.user_id],
                set_={"nickname": nickname},
            )
        )

    def remove_member(self, server_id: str, user_id: str) -> None:
        """Forget that ``user_id`` belongs to ``server_id``."""
        member = self.session.get(ServerMember, (server_id, user_id))
        if member is not None:
            self.session.delete(member)

    def is_member(self, server_id: str, user_id: str) -> bool:
        """Whether ``user_id`` is a member of ``server_id``."""
        return self.session.get(ServerMember, (server_id, user_id)) is not None

    def find_members(self, server_id: str, name_key: str) -> list[DirectoryMember]:
        """Members of ``server_id`` with a name equal to ``name_key`` ignoring case.

        Display name, nickname, global name and username are compared.
        """
        columns = (User.display_name, ServerMember.nickname, User.global_name, User.username)
        rows = self.session.execute(
            select(User, ServerMember.nickname)
            .join(ServerMember, ServerMember.user_id == User.id)
            .where(ServerMember.server_id == server_id)
            .where(
                or_(
                    *(
                        func.lower(func.normalize(column, literal_column("NFKC"))) == name_key
                        for column in columns
                    )
                )
            )
            .limit(50)
        ).all()
        return [
            DirectoryMember(
                user_id=user.id,
                display_name=user.display_name,
                nickname=nickname,
                global_name=user.global_name,
                username=user.username,
                privacy=PrivacyLevel(user.privacy_level),
                is_bridge=user.is_bridge,
            )
            for user, nickname in rows
        ]

    def create_persona(
        self, server_id: str | None, name: str, *, lineage_id: int | None = None
    ) -> Persona:
        """Create a persona with a new lineage, or with ``lineage_id`` when given.

        Re-creating or importing a persona passes its old lineage to keep its memories.
        """
        row = PersonaRow(server_id=server_id, name=name)
        if lineage_id is not None:
            row.lineage_id = lineage_id
        self.session.add(row)
        self.session.flush()
        return Persona(persona_id=row.id, name=row.name, lineage_id=row.lineage_id)
