"""The write decision moves out of the create function (issue #37).

Whether a create may happen (self-teaching, personal memories, reach, the scope's limit)
is decided once, in Python (``kioku._memory.write_decision``). The new
``kioku_create_memory_within_limit`` receives what was decided (the limit, whether an exact
repeat may be named) and reads no settings: it takes the scope's lock, looks for the exact
repeat, counts, and inserts. Its text is ``kioku/_db/sql/kioku_create_memory_within_limit.sql``
(a test keeps the two equal). The two ``kioku_create_memory`` functions stay for processes
of earlier releases during a rolling upgrade.

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-28
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

CREATE_MEMORY_WITHIN_LIMIT = """
CREATE FUNCTION kioku_create_memory_within_limit(
    p_server_key text,
    p_server_name text,
    p_scope text,
    p_owner_id text,
    p_owner_name text,
    p_owner_key text,
    p_lineage bigint,
    p_lock_key text,
    p_limit integer,
    p_persona_id integer,
    p_created_by text,
    p_content text,
    p_embedding halfvec,
    p_memory_type text,
    p_importance double precision,
    p_decay_rate double precision,
    p_attributes jsonb,
    p_check_repeat boolean,
    OUT outcome text,
    OUT memory_id bigint,
    OUT saved_count bigint
) LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(p_lock_key, 0));
    IF p_check_repeat THEN
        SELECT m.id INTO memory_id FROM memories m
        WHERE m.status = 'active' AND m.scope = p_scope
          AND m.persona_lineage_id IN (p_lineage, CASE WHEN p_scope = 'personal' THEN 0 END)
          AND ((p_scope = 'server' AND m.server_id = p_owner_id)
               OR (p_scope = 'personal' AND m.user_id = p_owner_id))
          AND m.content = p_content
          AND kioku_same_event(m.memory_type, m.happened_at, p_memory_type,
                               coalesce(kioku_event_time(p_attributes), now()))
        ORDER BY m.id LIMIT 1;
        IF memory_id IS NOT NULL THEN
            outcome := 'already_saved';
            RETURN;
        END IF;
    END IF;
    -- Read after the lock: a new snapshot sees every writer that committed before us.
    -- Personal limits count the user's global (lineage 0) memories too.
    SELECT COALESCE(sum(c.active), 0) INTO saved_count FROM memory_counts c
    WHERE c.scope = p_scope AND c.owner_id = p_owner_id
      AND c.persona_lineage_id IN (p_lineage, CASE WHEN p_scope = 'personal' THEN 0 END);
    IF saved_count >= p_limit THEN
        outcome := 'limit_reached';
        RETURN;
    END IF;

    -- A server without a row, registered by its first memory, keeps the self-teaching
    -- that let the caller write.
    IF NOT EXISTS (SELECT 1 FROM servers s WHERE s.id = p_server_key) THEN
        INSERT INTO servers (id, name, self_teaching_enabled)
        VALUES (p_server_key, p_server_name, true)
        ON CONFLICT (id) DO NOTHING;
    END IF;
    IF p_scope = 'personal' THEN
        INSERT INTO users (id, display_name, display_name_key)
        VALUES (p_owner_id, p_owner_name, p_owner_key)
        ON CONFLICT (id) DO NOTHING;
    END IF;
    INSERT INTO memories (
        scope, server_id, user_id, persona_lineage_id, persona_id, created_by, content,
        embedding, needs_embedding, memory_type, importance, decay_rate, attributes
    ) VALUES (
        p_scope,
        CASE WHEN p_scope = 'server' THEN p_owner_id END,
        CASE WHEN p_scope = 'personal' THEN p_owner_id END,
        p_lineage, p_persona_id, p_created_by, p_content,
        p_embedding, p_embedding IS NULL, p_memory_type, p_importance, p_decay_rate,
        p_attributes
    ) RETURNING id INTO memory_id;
    outcome := 'saved';
END $$;
"""
ARGUMENT_TYPES = (
    "text, text, text, text, text, text, bigint, text, integer, integer, text, text, halfvec, "
    "text, double precision, double precision, jsonb, boolean"
)


def upgrade() -> None:
    """Add the create function that receives the decided values."""
    op.execute(CREATE_MEMORY_WITHIN_LIMIT)


def downgrade() -> None:
    """Drop it."""
    op.execute(f"DROP FUNCTION kioku_create_memory_within_limit({ARGUMENT_TYPES})")
