"""An episodic memory is an event: the same words on another day are another event (#15).

``kioku_same_event`` is the rule, defined once: two memories record the same thing unless
one of them is episodic and they happened on different days (UTC). The create function's
exact-repeat check uses it, so a repeated episode on a new day is saved instead of
answering ``already_saved`` (and losing its event time); the duplicate refusal asks it
too (``MemoryRepository.same_event``).

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-24
"""

import importlib
from collections.abc import Sequence

from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_previous = importlib.import_module("kioku._db.migrations.versions.0013_hidden_scope_creates")

SAME_EVENT = """
CREATE FUNCTION kioku_same_event(
    p_type text, p_when timestamptz, q_type text, q_when timestamptz
) RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT (p_type IS DISTINCT FROM 'episodic' AND q_type IS DISTINCT FROM 'episodic')
        OR (p_when AT TIME ZONE 'UTC')::date = (q_when AT TIME ZONE 'UTC')::date
$$;
"""
_SAME_CONTENT = "      AND m.content = p_content\n"
assert _previous.CREATE_MEMORY.count(_SAME_CONTENT) == 1, "0013's create function changed shape"
CREATE_MEMORY = _previous.CREATE_MEMORY.replace(
    _SAME_CONTENT,
    _SAME_CONTENT + "      AND kioku_same_event(m.memory_type, m.happened_at, p_memory_type,\n"
    "                           coalesce(kioku_event_time(p_attributes), now()))\n",
    1,
)


def upgrade() -> None:
    """The rule, and the 19-argument create function using it."""
    op.execute(SAME_EVENT)
    op.execute(CREATE_MEMORY)


def downgrade() -> None:
    """0013's create function, then drop the rule."""
    op.execute(_previous.CREATE_MEMORY)
    op.execute("DROP FUNCTION kioku_same_event(text, timestamptz, text, timestamptz)")
