"""Servers, users, members and personas: the repository for kioku's directory tables."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from sqlalchemy import or_, select, text
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from kioku._context import Persona, PrivacyLevel, TurnContext, server_key
from kioku._db.models import PersonaRow, Server, ServerMember, User
from kioku._domain.settings import ServerSettings
from kioku._errors import ConfigurationError
from kioku._memory.resolution import DirectoryMember
from kioku._memory.text import name_key, normalise_name

SETTINGS_SOURCE = "kioku_server_settings(:key, :is_dm)"
"""The one definition of a server's settings and their defaults (migration 0006): a row
source other reads select from."""
_SETTINGS = text(f"SELECT * FROM {SETTINGS_SOURCE}")
_LOCK = text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))")


def settings_params(key: str, is_dm: bool) -> dict[str, object]:
    """Bind parameters of :data:`SETTINGS_SOURCE`."""
    return {"key": key, "is_dm": is_dm}


def settings_from_row(row: Any) -> ServerSettings:
    """A row of :data:`SETTINGS_SOURCE` as settings."""
    return ServerSettings(
        self_teaching_enabled=row.self_teaching_enabled,
        personal_memories_enabled=row.personal_memories_enabled,
        private_channel_ids=frozenset(row.private_channel_ids),
        stm_privacy_bypass=row.stm_privacy_bypass,
        max_server_memories=row.max_server_memories,
        max_personal_memories=row.max_personal_memories,
    )


class AccountRepository:
    """Reads and writes servers, users, members and personas in the caller's session."""

    def __init__(self, session: Session) -> None:
        """Work inside ``session``; the caller commits."""
        self.session = session

    def settings_for(self, context: TurnContext) -> ServerSettings:
        """Settings governing memories of the turn's server (or direct-message key)."""
        return self._settings(context.memory_server_key, is_dm=context.is_dm)

    def server_settings(self, server_id: str) -> ServerSettings:
        """Settings of the server ``server_id``, or the defaults when it has no row yet."""
        return self._settings(server_key(server_id), is_dm=False)

    def _settings(self, key: str, *, is_dm: bool) -> ServerSettings:
        return settings_from_row(self.session.execute(_SETTINGS, settings_params(key, is_dm)).one())

    def upsert_server(self, server_id: str, name: str | None = None, **settings: object) -> None:
        """Create or update a server and any of its settings (column names as keywords)."""
        values: dict[str, object] = {"id": server_key(server_id), "name": name, **settings}
        update = {k: v for k, v in values.items() if k != "id" and (k != "name" or v is not None)}
        statement = insert(Server).values(**values)
        self.session.execute(
            statement.on_conflict_do_update(index_elements=[Server.id], set_=update)
            if update
            else statement.on_conflict_do_nothing()
        )

    def add_server(self, server_id: str, name: str | None = None, **settings: object) -> None:
        """Create a server with these settings unless it exists (an existing one is kept)."""
        values: dict[str, object] = {"id": server_key(server_id), "name": name, **settings}
        self.session.execute(insert(Server).values(**values).on_conflict_do_nothing())

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
            "display_name_key": normalise_name(display_name),
            "global_name": global_name,
            "global_name_key": name_key(global_name),
            "username": username,
            "username_key": name_key(username),
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
        """Record that ``user_id`` belongs to ``server_id`` (with an optional nickname).

        Raises:
            ConfigurationError: the server or the user does not exist yet.
        """
        self._require_server(server_id, "add members to it")
        self._require_user(user_id, "add them to a server")
        nickname_key = name_key(nickname)
        statement = insert(ServerMember).values(
            server_id=server_key(server_id),
            user_id=user_id,
            nickname=nickname,
            nickname_key=nickname_key,
        )
        self.session.execute(
            statement.on_conflict_do_update(
                index_elements=[ServerMember.server_id, ServerMember.user_id],
                set_={"nickname": nickname, "nickname_key": nickname_key},
            )
        )

    def remove_member(self, server_id: str, user_id: str) -> None:
        """Forget that ``user_id`` belongs to ``server_id``."""
        member = self.session.get(ServerMember, (server_key(server_id), user_id))
        if member is not None:
            self.session.delete(member)

    def is_member(self, server_id: str, user_id: str) -> bool:
        """Whether ``user_id`` is a member of ``server_id``."""
        return self.session.get(ServerMember, (server_key(server_id), user_id)) is not None

    def invisible_among(self, user_ids: Collection[str]) -> frozenset[str]:
        """Those of ``user_ids`` whose stored privacy is ``FULL``."""
        if not user_ids:
            return frozenset()
        rows = self.session.scalars(
            select(User.id).where(
                User.id.in_(list(user_ids)), User.privacy_level == int(PrivacyLevel.FULL)
            )
        )
        return frozenset(rows)

    def find_members(self, server_id: str, name_key: str) -> list[DirectoryMember]:
        """Members of ``server_id`` one of whose names has the key ``name_key``.

        Display name, nickname, global name and username are compared on the keys stored
        beside them (``normalise_name``), so the database and Python match the same way.
        """
        keys = (
            User.display_name_key,
            ServerMember.nickname_key,
            User.global_name_key,
            User.username_key,
        )
        rows = self.session.execute(
            select(User, ServerMember.nickname)
            .join(ServerMember, ServerMember.user_id == User.id)
            .where(ServerMember.server_id == server_key(server_id))
            .where(or_(*(column == name_key for column in keys)))
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
        Most apps want :meth:`ensure_persona`, which returns an existing one.

        Raises:
            ConfigurationError: the server does not exist yet (``upsert_server`` first).
        """
        if server_id is not None:
            self._require_server(server_id, "create a persona")
        row = PersonaRow(
            server_id=server_key(server_id) if server_id is not None else None, name=name
        )
        if lineage_id is not None:
            row.lineage_id = lineage_id
        self.session.add(row)
        self.session.flush()
        return Persona(persona_id=row.id, name=row.name, lineage_id=row.lineage_id)

    def find_persona(self, server_id: str, name: str) -> Persona | None:
        """The persona called ``name`` on ``server_id`` (the oldest, if re-created), or None."""
        row = self.session.scalar(
            select(PersonaRow)
            .where(PersonaRow.server_id == server_key(server_id), PersonaRow.name == name)
            .order_by(PersonaRow.id)
            .limit(1)
        )
        return Persona(row.id, row.name, row.lineage_id) if row is not None else None

    def _require_server(self, server_id: str, doing: str) -> None:
        if self.session.get(Server, server_key(server_id)) is None:
            raise ConfigurationError(
                f"server {server_id!r} does not exist: call accounts.upsert_server"
                f"({server_id!r}, ...) before you {doing}"
            )

    def _require_user(self, user_id: str, doing: str) -> None:
        if self.session.get(User, user_id) is None:
            raise ConfigurationError(
                f"user {user_id!r} does not exist: call accounts.upsert_user"
                f"({user_id!r}, ...) before you {doing}"
            )

    def ensure_persona(self, server_id: str, name: str) -> Persona:
        """The persona called ``name`` on ``server_id``, created with a new lineage if missing.

        Running the same setup again gets the same persona (and lineage), so its memories
        stay, where :meth:`create_persona` would start a new lineage. Callers racing to
        create the same persona are serialised, so they all get one.

        Raises:
            ConfigurationError: the server does not exist yet (``upsert_server`` first).
        """
        found = self.find_persona(server_id, name)
        if found is not None:
            return found
        self.session.execute(_LOCK, {"key": f"kioku-persona:{server_key(server_id)}:{name}"})
        return self.find_persona(server_id, name) or self.create_persona(server_id, name)
