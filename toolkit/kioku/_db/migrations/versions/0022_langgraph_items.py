"""LangGraph store items: ``kioku.KiokuLangGraphStore`` (issue #39, item 2).

Each item of LangGraph's ``BaseStore`` API is a kioku memory (its searchable text, its
scope, its history) plus one row here: the namespace and key it is addressed by and the
JSON value itself, kept out of the memory's text. Deleting the memory (the store's
delete, or erasing its owner) deletes the row with it.

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-02
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add the table and its indexes."""
    op.execute(
        "CREATE TABLE langgraph_items ("
        "namespace text[] NOT NULL, key text NOT NULL, memory_id bigint NOT NULL, "
        "value jsonb NOT NULL, indexed boolean DEFAULT true NOT NULL, "
        "created_at timestamptz DEFAULT now() NOT NULL, "
        "updated_at timestamptz DEFAULT now() NOT NULL, "
        "CONSTRAINT pk_langgraph_items PRIMARY KEY (namespace, key), "
        "CONSTRAINT fk_langgraph_items_memory_id_memories FOREIGN KEY (memory_id) "
        "REFERENCES memories (id) ON DELETE CASCADE, "
        "CONSTRAINT ck_langgraph_items_namespace CHECK (cardinality(namespace) >= 1))"
    )
    op.execute("CREATE UNIQUE INDEX ix_langgraph_items_memory_id ON langgraph_items (memory_id)")
    op.execute("CREATE INDEX ix_langgraph_items_updated_at ON langgraph_items (updated_at)")


def downgrade() -> None:
    """Drop it."""
    op.execute("DROP TABLE langgraph_items")
