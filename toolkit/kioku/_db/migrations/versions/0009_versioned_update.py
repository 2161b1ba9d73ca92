"""An update that says which scope version it replaced (issue #13).

``kioku_update_memory_versioned`` updates like ``kioku_update_memory`` (kept for
processes of the previous release) and returns the memory's scope key with the
``memory_counts`` version before and after the change. The counts row is locked before
the update, so no other writer's change lies between the two: a process whose cached
window of the scope was at the "before" version may apply the change to it and keep it
as the "after" version instead of reloading it (``KiokuStore.applied_update``).

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-24
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UPDATE_VERSIONED = """
CREATE OR REPLACE FUNCTION kioku_update_memory_versioned(p_id bigint, p_content text,
    p_embedding halfvec, p_actor text, p_persona integer)
RETURNS TABLE(applied boolean, scope_kind text, scope_owner text, scope_lineage bigint,
    version_before bigint, version_after bigint, changed_at timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
    v_scope text;
    v_owner text;
    v_lineage bigint;
BEGIN
    SELECT m.scope, COALESCE(m.server_id, m.user_id), m.persona_lineage_id
    INTO v_scope, v_owner, v_lineage FROM memories m WHERE m.id = p_id;
    IF NOT FOUND THEN
        RETURN QUERY SELECT false, NULL::text, NULL::text, NULL::bigint, NULL::bigint,
            NULL::bigint, NULL::timestamptz;
        RETURN;
    END IF;
    SELECT c.version INTO version_before FROM memory_counts c
    WHERE (c.scope, c.owner_id, c.persona_lineage_id) = (v_scope, v_owner, v_lineage)
    FOR UPDATE;
    applied := kioku_update_memory(p_id, p_content, p_embedding, p_actor, p_persona);
    SELECT c.version INTO version_after FROM memory_counts c
    WHERE (c.scope, c.owner_id, c.persona_lineage_id) = (v_scope, v_owner, v_lineage);
    SELECT m.updated_at INTO changed_at FROM memories m WHERE m.id = p_id;
    scope_kind := v_scope;
    scope_owner := v_owner;
    scope_lineage := v_lineage;
    RETURN NEXT;
END $$;
"""


def upgrade() -> None:
    op.execute(UPDATE_VERSIONED)


def downgrade() -> None:
    op.execute("DROP FUNCTION kioku_update_memory_versioned(bigint, text, halfvec, text, integer)")
