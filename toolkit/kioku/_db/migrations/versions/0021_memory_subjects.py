"""Whom a server-wide memory is about, when that person is a bridged user (issue #39).

A personal fact about a bridged user is saved server-wide under their display name (SPEC
§3 step 4): nothing in the row says whose it is, so erasing that user left it in
``memories`` and its text in ``memory_history``. ``memory_subjects`` records the bridged
user of each such memory when it is saved, in the create's own statement. It has no
foreign key on purpose: the link outlives a memory the model deleted, so erasure still
finds that memory's history text to scrub. Erasing the user (or the server) removes it.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-01
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add the table and its look-up indexes."""
    op.execute(
        "CREATE TABLE memory_subjects ("
        "memory_id bigint NOT NULL, user_id text NOT NULL, server_id text NOT NULL, "
        "CONSTRAINT pk_memory_subjects PRIMARY KEY (memory_id, user_id))"
    )
    op.execute("CREATE INDEX ix_memory_subjects_user_id ON memory_subjects (user_id)")
    op.execute("CREATE INDEX ix_memory_subjects_server_id ON memory_subjects (server_id)")


def downgrade() -> None:
    """Drop it."""
    op.execute("DROP TABLE memory_subjects")
