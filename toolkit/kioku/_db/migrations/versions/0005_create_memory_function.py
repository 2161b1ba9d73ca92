"""One server-side call saves a memory; per-scope counts make the limit check O(1).

The create tools used five round trips (settings, lock, count + insert + history,
commit), and the count read every memory of the scope. Now ``memory_counts`` holds the
active memories per scope key, kept by triggers on ``memories`` (so bulk loads, deletes,
archiving and truncation keep it right), and ``kioku_create_memory`` runs the create's
steps in the order the spec checks them: settings, lock, limit, row and history. It runs
inside the caller's transaction or as a statement of its own: one round trip, atomic.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Outcomes: 'disabled' (self-teaching off), 'limit_reached' (nothing written) or 'saved'.
# A server without a row has the defaults: self-teaching on only in direct messages.
# A limit override of 0 or NULL means "use the configured default" (p_default_limit).
CREATE_MEMORY = """
CREATE FUNCTION kioku_create_memory(
    p_server_key text,
    p_server_name text,
    p_is_dm boolean,
    p_scope text,
    p_owner_id text,
    p_owner_name text,
    p_lineage bigint,
    p_lock_key text,
    p_default_limit integer,
    p_persona_id integer,
    p_created_by text,
    p_content text,
    p_embedding halfvec,
    p_memory_type text,
    p_importance double precision,
    p_decay_rate double precision,
    p_attributes jsonb,
    OUT outcome text,
    OUT memory_id bigint,
    OUT saved_count bigint,
    OUT memory_limit integer,
    OUT personal_memories_enabled boolean
) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_stored boolean;
    v_enabled boolean;
    v_server_limit integer;
    v_personal_limit integer;
BEGIN
    SELECT s.self_teaching_enabled, s.personal_memories_enabled,
           s.max_server_memories, s.max_personal_memories
    INTO v_enabled, personal_memories_enabled, v_server_limit, v_personal_limit
    FROM servers s WHERE s.id = p_server_key;
    v_stored := FOUND;
    IF NOT v_stored THEN
        v_enabled := p_is_dm;
        personal_memories_enabled := true;
    END IF;
    memory_limit := COALESCE(NULLIF(CASE WHEN p_scope = 'server'
        THEN v_server_limit ELSE v_personal_limit END, 0), p_default_limit);
    IF NOT v_enabled THEN
        outcome := 'disabled';
        RETURN;
    END IF;

    PERFORM pg_advisory_xact_lock(hashtextextended(p_lock_key, 0));
    -- Read after the lock: a new snapshot sees every writer that committed before us.
    -- Personal limits count the user's global (lineage 0) memories too.
    SELECT COALESCE(sum(c.active), 0) INTO saved_count FROM memory_counts c
    WHERE c.scope = p_scope AND c.owner_id = p_owner_id
      AND c.persona_lineage_id IN (p_lineage, CASE WHEN p_scope = 'personal' THEN 0 END);
    IF saved_count >= memory_limit THEN
        outcome := 'limit_reached';
        RETURN;
    END IF;

    IF NOT v_stored THEN
        INSERT INTO servers (id, name, self_teaching_enabled)
        VALUES (p_server_key, p_server_name, p_is_dm)
        ON CONFLICT (id) DO NOTHING;
    END IF;
    IF p_scope = 'personal' THEN
        INSERT INTO users (id, display_name) VALUES (p_owner_id, p_owner_name)
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
    INSERT INTO memory_history (memory_id, action, new_content, actor_user_id, persona_id)
    VALUES (memory_id, 'create', p_content, p_created_by, p_persona_id);
    outcome := 'saved';
END $$;
"""


COUNT_TRIGGERS = """
CREATE FUNCTION kioku_count_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO memory_counts AS c (scope, owner_id, persona_lineage_id, active)
    SELECT scope, COALESCE(server_id, user_id), persona_lineage_id, count(*)
    FROM added WHERE status = 'active' GROUP BY 1, 2, 3
    ON CONFLICT (scope, owner_id, persona_lineage_id)
    DO UPDATE SET active = c.active + EXCLUDED.active;
    RETURN NULL;
END $$;

CREATE FUNCTION kioku_count_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE memory_counts c SET active = c.active - r.n
    FROM (
        SELECT scope, COALESCE(server_id, user_id) AS owner_id, persona_lineage_id, count(*) AS n
        FROM removed WHERE status = 'active' GROUP BY 1, 2, 3
    ) r
    WHERE (c.scope, c.owner_id, c.persona_lineage_id) = (r.scope, r.owner_id, r.persona_lineage_id);
    RETURN NULL;
END $$;

CREATE FUNCTION kioku_count_moved() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.status = 'active' THEN
        UPDATE memory_counts SET active = active - 1
        WHERE scope = OLD.scope AND owner_id = COALESCE(OLD.server_id, OLD.user_id)
          AND persona_lineage_id = OLD.persona_lineage_id;
    END IF;
    IF NEW.status = 'active' THEN
        INSERT INTO memory_counts AS c (scope, owner_id, persona_lineage_id, active)
        VALUES (NEW.scope, COALESCE(NEW.server_id, NEW.user_id), NEW.persona_lineage_id, 1)
        ON CONFLICT (scope, owner_id, persona_lineage_id) DO UPDATE SET active = c.active + 1;
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION kioku_count_cleared() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM memory_counts;
    RETURN NULL;
END $$;

CREATE TRIGGER memories_count_added AFTER INSERT ON memories
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION kioku_count_added();
CREATE TRIGGER memories_count_removed AFTER DELETE ON memories
    REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION kioku_count_removed();
CREATE TRIGGER memories_count_moved
    AFTER UPDATE OF status, scope, server_id, user_id, persona_lineage_id ON memories
    FOR EACH ROW WHEN (
        OLD.status IS DISTINCT FROM NEW.status OR OLD.scope IS DISTINCT FROM NEW.scope
        OR OLD.server_id IS DISTINCT FROM NEW.server_id OR OLD.user_id IS DISTINCT FROM NEW.user_id
        OR OLD.persona_lineage_id IS DISTINCT FROM NEW.persona_lineage_id
    ) EXECUTE FUNCTION kioku_count_moved();
CREATE TRIGGER memories_count_cleared AFTER TRUNCATE ON memories
    FOR EACH STATEMENT EXECUTE FUNCTION kioku_count_cleared();

INSERT INTO memory_counts (scope, owner_id, persona_lineage_id, active)
SELECT scope, COALESCE(server_id, user_id), persona_lineage_id, count(*)
FROM memories WHERE status = 'active' GROUP BY 1, 2, 3;
"""


def upgrade() -> None:
    op.create_table(
        "memory_counts",
        sa.Column("scope", sa.Text(), nullable=False),
        sa.Column("owner_id", sa.Text(), nullable=False),
        sa.Column("persona_lineage_id", sa.BigInteger(), nullable=False),
        sa.Column("active", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.PrimaryKeyConstraint(
            "scope", "owner_id", "persona_lineage_id", name=op.f("pk_memory_counts")
        ),
    )
    # Writers of memories must not slip between the backfill and the triggers.
    op.execute("LOCK TABLE memories IN SHARE ROW EXCLUSIVE MODE")
    op.execute(COUNT_TRIGGERS)
    op.execute(CREATE_MEMORY)


def downgrade() -> None:
    op.execute("DROP FUNCTION IF EXISTS kioku_create_memory")
    for trigger in ("added", "removed", "moved", "cleared"):
        op.execute(f"DROP TRIGGER IF EXISTS memories_count_{trigger} ON memories")
        op.execute(f"DROP FUNCTION IF EXISTS kioku_count_{trigger}")
    op.drop_table("memory_counts")
