"""An update may correct when the memory's event happened (issue #15).

``kioku_update_memory`` and ``kioku_update_memory_versioned`` gain a ``p_event_time``
argument, ISO 8601 text with its offset as kioku stores it: when it is not ``NULL``, the
same ``UPDATE`` that changes the content sets ``attributes.event_time`` (and so
``event_time`` and ``happened_at``), one history row as before. The five-argument forms
stay for processes of the previous release and call the new ones with ``NULL``, so each
body exists once. A changed event time moves the scope's version like a changed text, and
adds a history row (its texts, the same when only the time changed: the history keeps
texts, not times).

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-27
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UPDATE_MEMORY = """
CREATE FUNCTION kioku_update_memory(p_id bigint, p_content text,
    p_embedding halfvec, p_actor text, p_persona integer, p_event_time text)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    v_found boolean;
BEGIN
    PERFORM kioku_act_as(p_actor, p_persona);
    UPDATE memories SET content = p_content, embedding = p_embedding,
        needs_embedding = p_embedding IS NULL, updated_at = now(),
        attributes = CASE WHEN p_event_time IS NULL THEN attributes
            ELSE jsonb_set(COALESCE(attributes, '{}'::jsonb), '{event_time}',
                to_jsonb(p_event_time))
            END
    WHERE id = p_id;
    v_found := FOUND;
    PERFORM kioku_act_as(NULL, NULL);
    RETURN v_found;
END $$;
"""
"""``kioku_update_memory`` with an event time."""

UPDATE_VERSIONED = """
CREATE FUNCTION kioku_update_memory_versioned(p_id bigint, p_content text,
    p_embedding halfvec, p_actor text, p_persona integer, p_event_time text)
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
    applied := kioku_update_memory(p_id, p_content, p_embedding, p_actor, p_persona,
        p_event_time);
    SELECT c.version INTO version_after FROM memory_counts c
    WHERE (c.scope, c.owner_id, c.persona_lineage_id) = (v_scope, v_owner, v_lineage);
    SELECT m.updated_at INTO changed_at FROM memories m WHERE m.id = p_id;
    scope_kind := v_scope;
    scope_owner := v_owner;
    scope_lineage := v_lineage;
    RETURN NEXT;
END $$;
"""
"""Migration 0009's ``kioku_update_memory_versioned``, passing an event time on."""

_FORWARDERS = """
CREATE OR REPLACE FUNCTION kioku_update_memory(p_id bigint, p_content text,
    p_embedding halfvec, p_actor text, p_persona integer)
RETURNS boolean LANGUAGE sql AS $$
    SELECT kioku_update_memory(p_id, p_content, p_embedding, p_actor, p_persona, NULL)
$$;

CREATE OR REPLACE FUNCTION kioku_update_memory_versioned(p_id bigint, p_content text,
    p_embedding halfvec, p_actor text, p_persona integer)
RETURNS TABLE(applied boolean, scope_kind text, scope_owner text, scope_lineage bigint,
    version_before bigint, version_after bigint, changed_at timestamptz)
LANGUAGE sql AS $$
    SELECT * FROM kioku_update_memory_versioned(p_id, p_content, p_embedding, p_actor,
        p_persona, NULL)
$$;
"""
"""The five-argument forms, for processes of the previous release."""


def _triggers(changed: str, columns: str) -> str:
    """The history and scope-version triggers on updates, firing when ``changed`` holds."""
    return f"""
DROP TRIGGER memories_history_changed ON memories;
CREATE TRIGGER memories_history_changed AFTER UPDATE OF {columns} ON memories
    FOR EACH ROW WHEN ({changed})
    EXECUTE FUNCTION kioku_log_history();
DROP TRIGGER memories_count_moved ON memories;
CREATE TRIGGER memories_count_moved
    AFTER UPDATE OF status, scope, server_id, user_id, persona_lineage_id, {columns}
    ON memories
    FOR EACH ROW WHEN (
        OLD.status IS DISTINCT FROM NEW.status OR OLD.scope IS DISTINCT FROM NEW.scope
        OR OLD.server_id IS DISTINCT FROM NEW.server_id OR OLD.user_id IS DISTINCT FROM NEW.user_id
        OR OLD.persona_lineage_id IS DISTINCT FROM NEW.persona_lineage_id
        OR {changed}
    ) EXECUTE FUNCTION kioku_count_moved();
"""


_CONTENT_CHANGED = "OLD.content IS DISTINCT FROM NEW.content"
_CONTENT_OR_TIME_CHANGED = (
    "OLD.content IS DISTINCT FROM NEW.content OR OLD.happened_at IS DISTINCT FROM NEW.happened_at"
)
"""A new event time is a change of the memory: a history row, and other processes' cached
windows of its scope are read again (the scope's version moves)."""


def upgrade() -> None:
    op.execute(UPDATE_MEMORY)
    op.execute(UPDATE_VERSIONED)
    op.execute(_FORWARDERS)
    op.execute(_triggers(_CONTENT_OR_TIME_CHANGED, "content, attributes"))


PREVIOUS_UPDATE_MEMORY = """
CREATE OR REPLACE FUNCTION kioku_update_memory(p_id bigint, p_content text,
    p_embedding halfvec, p_actor text, p_persona integer)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    v_found boolean;
BEGIN
    PERFORM kioku_act_as(p_actor, p_persona);
    UPDATE memories SET content = p_content, embedding = p_embedding,
        needs_embedding = p_embedding IS NULL, updated_at = now()
    WHERE id = p_id;
    v_found := FOUND;
    PERFORM kioku_act_as(NULL, NULL);
    RETURN v_found;
END $$;
"""
"""Migration 0006's ``kioku_update_memory``, restored by the downgrade."""

PREVIOUS_UPDATE_VERSIONED = """
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
"""Migration 0009's ``kioku_update_memory_versioned``, restored by the downgrade."""


def downgrade() -> None:
    op.execute(_triggers(_CONTENT_CHANGED, "content"))
    op.execute(PREVIOUS_UPDATE_MEMORY)
    op.execute(PREVIOUS_UPDATE_VERSIONED)
    op.execute(
        "DROP FUNCTION kioku_update_memory_versioned(bigint, text, halfvec, text, integer, text)"
    )
    op.execute("DROP FUNCTION kioku_update_memory(bigint, text, halfvec, text, integer, text)")
