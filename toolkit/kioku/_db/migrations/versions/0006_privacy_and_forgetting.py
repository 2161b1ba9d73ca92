"""Privacy, coherence and forgetting (issue #11).

- ``memory_counts.version``: every change to a scope's memories (insert, delete, move,
  new content) takes a new value from one sequence, so a process holding a cached copy
  of the scope sees that it is stale with one cheap read.
- ``memory_history`` is written by a trigger on ``memories`` (the one place history is
  written), and each row says whose memory it was (scope, owner, lineage), so erasing a
  person scrubs the text of every memory they ever had, deleted ones included.
- ``kioku_server_settings`` is the one definition of a server's settings and their
  defaults (self-teaching on only in direct messages without a row); the create
  function and Python both read it.
- Names are compared on stored keys (``*_key``), normalised once in Python.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from kioku._memory.text import name_key, normalise_name

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SERVER_SETTINGS = """
CREATE FUNCTION kioku_server_settings(p_key text, p_is_dm boolean,
    OUT stored boolean,
    OUT self_teaching_enabled boolean,
    OUT personal_memories_enabled boolean,
    OUT private_channel_ids text[],
    OUT stm_privacy_bypass boolean,
    OUT max_server_memories integer,
    OUT max_personal_memories integer
) LANGUAGE sql STABLE AS $$
    SELECT s.id IS NOT NULL,
           CASE WHEN s.id IS NULL THEN p_is_dm ELSE s.self_teaching_enabled END,
           COALESCE(s.personal_memories_enabled, true),
           COALESCE(s.private_channel_ids, '{}'),
           COALESCE(s.stm_privacy_bypass, false),
           NULLIF(s.max_server_memories, 0),
           NULLIF(s.max_personal_memories, 0)
    FROM (SELECT p_key AS key) AS wanted LEFT JOIN servers AS s ON s.id = wanted.key
$$;
"""

# History rows come from here alone. A create's actor is the row's ``created_by``; an
# update's or a delete's is the transaction-local ``kioku.actor`` / ``kioku.persona_id``
# that kioku_update_memory and kioku_delete_memory set around their statement (unset, as
# for a cascade or an erasure, the row names no actor).
HISTORY_TRIGGER = """
CREATE FUNCTION kioku_log_history() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    v_actor text;
    v_persona integer;
BEGIN
    IF TG_OP <> 'INSERT' THEN
        v_actor := NULLIF(current_setting('kioku.actor', true), '');
        v_persona := NULLIF(current_setting('kioku.persona_id', true), '')::integer;
    END IF;
    IF TG_OP = 'INSERT' THEN
        INSERT INTO memory_history (memory_id, action, old_content, new_content,
            actor_user_id, persona_id, scope, owner_id, persona_lineage_id)
        VALUES (NEW.id, 'create', NULL, NEW.content, NEW.created_by, NEW.persona_id,
            NEW.scope, COALESCE(NEW.server_id, NEW.user_id), NEW.persona_lineage_id);
    ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO memory_history (memory_id, action, old_content, new_content,
            actor_user_id, persona_id, scope, owner_id, persona_lineage_id)
        VALUES (NEW.id, 'update', OLD.content, NEW.content, v_actor, v_persona,
            NEW.scope, COALESCE(NEW.server_id, NEW.user_id), NEW.persona_lineage_id);
    ELSE
        INSERT INTO memory_history (memory_id, action, old_content, new_content,
            actor_user_id, persona_id, scope, owner_id, persona_lineage_id)
        VALUES (OLD.id, 'delete', OLD.content, NULL, v_actor, v_persona,
            OLD.scope, COALESCE(OLD.server_id, OLD.user_id), OLD.persona_lineage_id);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER memories_history_created AFTER INSERT ON memories
    FOR EACH ROW EXECUTE FUNCTION kioku_log_history();
CREATE TRIGGER memories_history_changed AFTER UPDATE OF content ON memories
    FOR EACH ROW WHEN (OLD.content IS DISTINCT FROM NEW.content)
    EXECUTE FUNCTION kioku_log_history();
CREATE TRIGGER memories_history_deleted AFTER DELETE ON memories
    FOR EACH ROW EXECUTE FUNCTION kioku_log_history();

CREATE FUNCTION kioku_act_as(p_actor text, p_persona integer) RETURNS void
LANGUAGE sql AS $$
    SELECT set_config('kioku.actor', COALESCE(p_actor, ''), true),
           set_config('kioku.persona_id', COALESCE(p_persona::text, ''), true)
$$;

CREATE FUNCTION kioku_update_memory(p_id bigint, p_content text, p_embedding halfvec,
    p_actor text, p_persona integer)
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

CREATE FUNCTION kioku_delete_memory(p_id bigint, p_actor text, p_persona integer)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    v_found boolean;
BEGIN
    PERFORM kioku_act_as(p_actor, p_persona);
    DELETE FROM memories WHERE id = p_id;
    v_found := FOUND;
    PERFORM kioku_act_as(NULL, NULL);
    RETURN v_found;
END $$;
"""

# Versions: one sequence, so a value is never seen twice for a scope (no ABA when a
# scope's row is deleted by TRUNCATE and made again).
COUNT_TRIGGERS = """
CREATE SEQUENCE kioku_scope_version_seq;

CREATE OR REPLACE FUNCTION kioku_count_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO memory_counts AS c (scope, owner_id, persona_lineage_id, active, version)
    SELECT scope, COALESCE(server_id, user_id), persona_lineage_id,
           count(*) FILTER (WHERE status = 'active'), nextval('kioku_scope_version_seq')
    FROM added GROUP BY 1, 2, 3
    ON CONFLICT (scope, owner_id, persona_lineage_id)
    DO UPDATE SET active = c.active + EXCLUDED.active, version = EXCLUDED.version;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION kioku_count_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE memory_counts c SET active = c.active - r.n,
        version = nextval('kioku_scope_version_seq')
    FROM (
        SELECT scope, COALESCE(server_id, user_id) AS owner_id, persona_lineage_id,
               count(*) FILTER (WHERE status = 'active') AS n
        FROM removed GROUP BY 1, 2, 3
    ) r
    WHERE (c.scope, c.owner_id, c.persona_lineage_id) = (r.scope, r.owner_id, r.persona_lineage_id);
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION kioku_count_moved() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE memory_counts
    SET active = active - CASE WHEN OLD.status = 'active' THEN 1 ELSE 0 END,
        version = nextval('kioku_scope_version_seq')
    WHERE scope = OLD.scope AND owner_id = COALESCE(OLD.server_id, OLD.user_id)
      AND persona_lineage_id = OLD.persona_lineage_id;
    INSERT INTO memory_counts AS c (scope, owner_id, persona_lineage_id, active, version)
    VALUES (NEW.scope, COALESCE(NEW.server_id, NEW.user_id), NEW.persona_lineage_id,
            CASE WHEN NEW.status = 'active' THEN 1 ELSE 0 END,
            nextval('kioku_scope_version_seq'))
    ON CONFLICT (scope, owner_id, persona_lineage_id)
    DO UPDATE SET active = c.active + EXCLUDED.active, version = EXCLUDED.version;
    RETURN NULL;
END $$;

DROP TRIGGER memories_count_moved ON memories;
CREATE TRIGGER memories_count_moved
    AFTER UPDATE OF status, scope, server_id, user_id, persona_lineage_id, content ON memories
    FOR EACH ROW WHEN (
        OLD.status IS DISTINCT FROM NEW.status OR OLD.scope IS DISTINCT FROM NEW.scope
        OR OLD.server_id IS DISTINCT FROM NEW.server_id OR OLD.user_id IS DISTINCT FROM NEW.user_id
        OR OLD.persona_lineage_id IS DISTINCT FROM NEW.persona_lineage_id
        OR OLD.content IS DISTINCT FROM NEW.content
    ) EXECUTE FUNCTION kioku_count_moved();

UPDATE memory_counts SET version = nextval('kioku_scope_version_seq');
"""

# Outcomes: 'disabled' (self-teaching off), 'limit_reached' (nothing written) or 'saved'.
# A limit override of 0 or NULL means "use the configured default" (p_default_limit).
CREATE_MEMORY = """
CREATE FUNCTION kioku_create_memory(
    p_server_key text,
    p_server_name text,
    p_is_dm boolean,
    p_scope text,
    p_owner_id text,
    p_owner_name text,
    p_owner_key text,
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
    s record;
BEGIN
    SELECT * INTO s FROM kioku_server_settings(p_server_key, p_is_dm);
    personal_memories_enabled := s.personal_memories_enabled;
    memory_limit := COALESCE(CASE WHEN p_scope = 'server'
        THEN s.max_server_memories ELSE s.max_personal_memories END, p_default_limit);
    IF NOT s.self_teaching_enabled THEN
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

    IF NOT s.stored THEN
        INSERT INTO servers (id, name, self_teaching_enabled)
        VALUES (p_server_key, p_server_name, p_is_dm)
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


def _backfill_name_keys() -> None:
    connection = op.get_bind()
    users = connection.execute(sa.text("SELECT id, display_name, global_name, username FROM users"))
    for user_id, display_name, global_name, username in users.all():
        connection.execute(
            sa.text(
                "UPDATE users SET display_name_key = :d, global_name_key = :g, "
                "username_key = :u WHERE id = :id"
            ),
            {
                "id": user_id,
                "d": normalise_name(display_name or ""),
                "g": name_key(global_name),
                "u": name_key(username),
            },
        )
    members = connection.execute(
        sa.text(
            "SELECT server_id, user_id, nickname FROM server_members WHERE nickname IS NOT NULL"
        )
    )
    for server_id, user_id, nickname in members.all():
        connection.execute(
            sa.text(
                "UPDATE server_members SET nickname_key = :k WHERE server_id = :s AND user_id = :u"
            ),
            {"k": normalise_name(nickname), "s": server_id, "u": user_id},
        )


def upgrade() -> None:
    op.execute("LOCK TABLE memories IN SHARE ROW EXCLUSIVE MODE")
    op.add_column("memory_counts", sa.Column("version", sa.BigInteger(), server_default="0"))
    for column in ("scope", "owner_id"):
        op.add_column("memory_history", sa.Column(column, sa.Text()))
    op.add_column("memory_history", sa.Column("persona_lineage_id", sa.BigInteger()))
    op.add_column("memory_history", sa.Column("erased_at", sa.DateTime(timezone=True)))
    op.execute(
        "UPDATE memory_history h SET scope = m.scope, "
        "owner_id = COALESCE(m.server_id, m.user_id), persona_lineage_id = m.persona_lineage_id "
        "FROM memories m WHERE m.id = h.memory_id"
    )
    op.create_index("ix_memory_history_owner", "memory_history", ["owner_id", "scope"])
    op.create_index("ix_memory_history_created_at", "memory_history", ["created_at"])
    for column in ("display_name_key", "global_name_key", "username_key"):
        op.add_column("users", sa.Column(column, sa.Text()))
    op.add_column("server_members", sa.Column("nickname_key", sa.Text()))
    _backfill_name_keys()
    op.execute("DROP FUNCTION kioku_create_memory")
    op.execute(SERVER_SETTINGS)
    op.execute(COUNT_TRIGGERS)
    op.execute(HISTORY_TRIGGER)
    op.execute(CREATE_MEMORY)


def downgrade() -> None:
    raise NotImplementedError("0006 cannot be downgraded: restore a backup instead")
