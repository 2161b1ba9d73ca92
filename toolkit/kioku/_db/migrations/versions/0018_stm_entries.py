"""Short-term memory entries are rows of ``stm_threads``, no longer checkpoint threads.

Each entry's state (the JSON :meth:`kioku.StmEntry.to_state` gives) moves into the new
``entry`` column of its registry row, so a capture writes one row instead of a
checkpoint, its blobs and the row, and agents' checkpoint tables hold only their own
conversations. Entries kept as LangGraph checkpoints by the previous release are copied
over, then their threads are deleted; a registry row whose thread is gone is dropped.

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-27
"""

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from psycopg.types.json import Jsonb
from sqlalchemy.dialects.postgresql import JSONB

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_STM_THREADS = "kioku-stm:%"
_CHECKPOINT_TABLES = ("checkpoint_writes", "checkpoint_blobs", "checkpoints")


def _copy_from_checkpoints(bind: sa.Connection) -> None:
    """Copy each entry's latest checkpoint into its row, then delete the threads."""
    from langgraph.checkpoint.postgres import PostgresSaver

    driver: Any = bind.connection.driver_connection
    saver = PostgresSaver(driver)
    threads = bind.execute(sa.text("SELECT thread_id FROM stm_threads")).scalars().all()
    for thread_id in threads:
        stored = saver.get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
        values = dict(stored.checkpoint["channel_values"]) if stored is not None else {}
        if not values.get("meta"):  # no entry in it: the row is dropped below
            continue
        with driver.cursor() as cursor:
            cursor.execute(
                "UPDATE stm_threads SET entry = %s WHERE thread_id = %s",
                (Jsonb(values), thread_id),
            )
    for table in _CHECKPOINT_TABLES:
        delete = sa.text(f"DELETE FROM {table} WHERE thread_id LIKE :stm")
        bind.execute(delete, {"stm": _STM_THREADS})


def upgrade() -> None:
    """Add ``stm_threads.entry`` and fill it from the checkpoints."""
    op.add_column("stm_threads", sa.Column("entry", JSONB(), nullable=True))
    bind = op.get_bind()
    if sa.inspect(bind).has_table("checkpoints"):
        _copy_from_checkpoints(bind)
    op.execute("DELETE FROM stm_threads WHERE entry IS NULL")
    op.alter_column("stm_threads", "entry", nullable=False)


def downgrade() -> None:
    """Drop the column (entries are not written back as checkpoints)."""
    op.drop_column("stm_threads", "entry")
