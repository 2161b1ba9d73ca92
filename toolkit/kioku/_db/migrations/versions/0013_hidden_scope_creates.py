"""A create into a scope the turn cannot see looks for no repeat (issue #15).

``kioku_create_memory`` answered an exact repeat with ``already_saved`` and the existing
memory's id, before checking the limit. For a scope the turn may not see (another person's
personal memories where personal memories are off) that confirmed what a hidden memory
says: by the old id, or by saving where a full scope refuses everything else. The function
gains ``p_check_repeat``; the caller turns it off for such scopes (``kioku._memory.create``
asks :mod:`kioku._reach`), so the create is a plain insert within the limit. The previous
function (18 arguments) stays for processes of the previous version during a rolling
upgrade.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-24
"""

import importlib
from collections.abc import Sequence

from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_previous = importlib.import_module("kioku._db.migrations.versions.0010_default_server")
_create_once = importlib.import_module("kioku._db.migrations.versions.0007_create_once")

_LAST_ARGUMENT = "    p_attributes jsonb,\n"
_REPEAT = _create_once._SAME_CONTENT
assert _LAST_ARGUMENT in _previous.CREATE_MEMORY, "0010's create function changed shape"
assert _REPEAT in _previous.CREATE_MEMORY, "0010's create function changed shape"

CREATE_MEMORY = _previous.CREATE_MEMORY.replace(
    _LAST_ARGUMENT, _LAST_ARGUMENT + "    p_check_repeat boolean,\n", 1
).replace(_REPEAT, "\n    IF p_check_repeat THEN" + _REPEAT + "    END IF;\n", 1)
ARGUMENT_TYPES = (
    "text, text, boolean, text, text, text, text, bigint, text, integer, integer, text, text, "
    "halfvec, text, double precision, double precision, jsonb, boolean"
)


def upgrade() -> None:
    """Add the 19-argument function beside the 18-argument one."""
    op.execute(CREATE_MEMORY)


def downgrade() -> None:
    """Drop it."""
    op.execute(f"DROP FUNCTION kioku_create_memory({ARGUMENT_TYPES})")
