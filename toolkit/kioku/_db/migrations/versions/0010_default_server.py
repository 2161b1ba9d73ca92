"""The memory spaces of ``TurnContext.for_user`` learn without a row (issue #14).

``TurnContext.for_user`` gives each user a memory space of their own, the server
``user-space:<user id>``. Like a direct message, such a space lets the model write
long-term memories until settings are stored for it; every other server without a row
still does not. The settings and their defaults stay defined in ``kioku_server_settings``
alone.

``kioku_create_memory`` registers a server without a row on its first memory; it now
stores the self-teaching it just found on (before, "on only in direct messages", which
would have turned a user's space off after its first memory).

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-24
"""

import importlib
from collections.abc import Sequence

from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

USER_SPACE_PREFIX = "user-space:"
"""``kioku._context.USER_SPACE_PREFIX`` (a test keeps the two equal)."""

_settings = importlib.import_module("kioku._db.migrations.versions.0006_privacy_and_forgetting")
_create = importlib.import_module("kioku._db.migrations.versions.0007_create_once")

_WITHOUT_ROW = "CASE WHEN s.id IS NULL THEN p_is_dm ELSE"
_REGISTERED = "VALUES (p_server_key, p_server_name, p_is_dm)"
assert _WITHOUT_ROW in _settings.SERVER_SETTINGS, "0006's settings function changed shape"
assert _REGISTERED in _create.CREATE_MEMORY, "0007's create function changed shape"

SERVER_SETTINGS = _settings.SERVER_SETTINGS.replace(
    "CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1
).replace(
    _WITHOUT_ROW,
    f"CASE WHEN s.id IS NULL THEN p_is_dm OR starts_with(p_key, '{USER_SPACE_PREFIX}') ELSE",
    1,
)
CREATE_MEMORY = _create.CREATE_MEMORY.replace(
    _REGISTERED, "VALUES (p_server_key, p_server_name, s.self_teaching_enabled)", 1
)


def upgrade() -> None:
    """Self-teaching on without a row in direct messages and in users' spaces."""
    op.execute(SERVER_SETTINGS)
    op.execute(CREATE_MEMORY)


def downgrade() -> None:
    """Back to migration 0009's functions."""
    op.execute(
        _settings.SERVER_SETTINGS.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1)
    )
    op.execute(_create.CREATE_MEMORY)
