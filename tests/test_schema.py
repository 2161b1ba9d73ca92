"""Migrations: idempotent, safe from two processes, and in step with the models."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from typing import Any

import pytest
from alembic import command
from sqlalchemy import Engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session

from bench.common import new_database
from kioku import ConfigurationError, DatabaseUnavailableError, KiokuSettings, KiokuStore
from kioku._accounts import AccountRepository
from kioku._db.engine import check_pgvector, make_engine, normalise_url
from kioku._db.schema import alembic_config
from kioku._memory.text import normalise_name


def test_setup_is_idempotent(engine: Engine, settings: KiokuSettings) -> None:
    with KiokuStore(engine, settings=settings) as store:
        store.setup()
        store.setup()
    with engine.connect() as connection:
        version = connection.execute(
            text("SELECT version_num FROM kioku_alembic_version")
        ).scalar_one()
        extension = connection.execute(
            text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        ).scalar_one()
    assert version == "0025"
    assert tuple(int(p) for p in extension.split(".")[:2]) >= (0, 8)


def test_models_and_migrations_agree(engine: Engine) -> None:
    command.check(alembic_config(engine))  # raises when autogenerate would find changes


def test_setup_from_two_processes_at_once(database_url: str) -> None:
    with new_database(database_url, "kioku_setup_race") as url:
        _setup_from_two_processes_at_once(url)


def _setup_from_two_processes_at_once(url: str) -> None:
    script = textwrap.dedent(
        f"""
        from kioku import KiokuSettings, KiokuStore
        from kioku._db.engine import make_engine
        store = KiokuStore(make_engine({url!r}), settings=KiokuSettings(database_url={url!r}))
        store.setup()
        print("ok")
        """
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=120) for p in procs]
    for proc, (out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
        assert out.strip() == "ok"
    race = make_engine(url)
    with race.connect() as connection:
        assert (
            connection.execute(text("SELECT count(*) FROM kioku_alembic_version")).scalar_one() == 1
        )
        assert connection.execute(text("SELECT count(*) FROM memories")).scalar_one() == 0
    race.dispose()


def test_unreachable_database_fails_fast_with_a_fix() -> None:
    engine = make_engine("postgresql://nobody@/nodb?host=/nonexistent-socket-dir")
    with pytest.raises(DatabaseUnavailableError, match="KIOKU_DATABASE_URL"):
        check_pgvector(engine)


@pytest.mark.parametrize("url", ["sqlite:///x.db", "not a url at all ::"])
def test_non_postgres_url_is_a_configuration_error(url: str) -> None:
    with pytest.raises(ConfigurationError, match="KIOKU_DATABASE_URL"):
        normalise_url(url)


class _ServerWithoutPgvector:
    """Stands in for an engine whose server answers that ``vector`` is not available."""

    url = make_url("postgresql+psycopg://app@db.internal/app")
    row: tuple[str] | None = None

    def connect(self) -> _ServerWithoutPgvector:
        return self

    def __enter__(self) -> _ServerWithoutPgvector:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def execute(self, *args: object) -> _ServerWithoutPgvector:
        return self

    def first(self) -> tuple[str] | None:
        return self.row


class _ServerWithOldPgvector(_ServerWithoutPgvector):
    row = ("0.6.0",)


def test_missing_pgvector_says_how_to_install_it() -> None:
    with pytest.raises(DatabaseUnavailableError, match="pgvector.*Install it"):
        check_pgvector(_ServerWithoutPgvector())  # type: ignore[arg-type]


def test_old_pgvector_is_refused() -> None:
    with pytest.raises(DatabaseUnavailableError, match="offers pgvector 0.6.0"):
        check_pgvector(_ServerWithOldPgvector())  # type: ignore[arg-type]


def test_upgrading_counts_the_memories_already_saved(fresh_database: str) -> None:
    """Migration 0005 fills ``memory_counts`` from the memories a database already holds."""
    engine = make_engine(fresh_database)
    try:
        with engine.begin() as connection:
            connection.execute(text("CREATE EXTENSION IF NOT EXISTS vector"))
        command.upgrade(alembic_config(engine), "0004")
        with engine.begin() as connection:
            connection.execute(text("INSERT INTO servers (id) VALUES ('s1')"))
            connection.execute(text("INSERT INTO users (id, display_name) VALUES ('u1', 'U')"))
            connection.execute(
                text(
                    "INSERT INTO memories (scope, server_id, user_id, persona_lineage_id, "
                    "content, status) VALUES "
                    "('server', 's1', NULL, 1, 'a', 'active'), "
                    "('server', 's1', NULL, 1, 'b', 'active'), "
                    "('server', 's1', NULL, 1, 'c', 'archived'), "
                    "('personal', NULL, 'u1', 0, 'd', 'active')"
                )
            )
        command.upgrade(alembic_config(engine), "head")
        with engine.connect() as connection:
            counts = connection.execute(
                text("SELECT scope, owner_id, persona_lineage_id, active FROM memory_counts")
            ).all()
        assert sorted(tuple(row) for row in counts) == [
            ("personal", "u1", 0, 1),
            ("server", "s1", 1, 2),
        ]
    finally:
        engine.dispose()


def test_upgrading_to_0006_backfills_owners_name_keys_and_versions(fresh_database: str) -> None:
    """Migration 0006 gives existing history rows their owner, names their keys, scopes
    their versions; history of a memory already gone keeps no owner."""
    engine = make_engine(fresh_database)
    try:
        with engine.begin() as connection:
            connection.execute(text("CREATE EXTENSION IF NOT EXISTS vector"))
        command.upgrade(alembic_config(engine), "0005")
        with engine.begin() as connection:
            connection.execute(text("INSERT INTO servers (id) VALUES ('s1')"))
            connection.execute(
                text("INSERT INTO users (id, display_name, username) VALUES ('u1', 'Straße', 'MJ')")
            )
            connection.execute(
                text(
                    "INSERT INTO server_members (server_id, user_id, nickname) "
                    "VALUES ('s1', 'u1', 'Mary  Jane')"
                )
            )
            kept = connection.execute(
                text(
                    "INSERT INTO memories (scope, user_id, persona_lineage_id, content) "
                    "VALUES ('personal', 'u1', 10000, 'tea') RETURNING id"
                )
            ).scalar_one()
            connection.execute(
                text(
                    "INSERT INTO memory_history (memory_id, action, new_content) VALUES "
                    "(:kept, 'create', 'tea'), (999, 'delete', 'gone')"
                ),
                {"kept": kept},
            )
        command.upgrade(alembic_config(engine), "head")
        with engine.connect() as connection:
            owners = connection.execute(
                text("SELECT memory_id, scope, owner_id FROM memory_history ORDER BY memory_id")
            ).all()
            versions = connection.execute(text("SELECT version FROM memory_counts")).scalars()
            assert all(v and v > 0 for v in versions)
        assert [tuple(row) for row in owners] == [(kept, "personal", "u1"), (999, None, None)]
        with Session(engine) as session:
            accounts = AccountRepository(session)
            for typed in ("STRASSE", "mary jane", "mj"):
                assert [m.user_id for m in accounts.find_members("s1", normalise_name(typed))] == [
                    "u1"
                ]
    finally:
        engine.dispose()


def test_setup_reports_what_it_did(database_url: str) -> None:
    with new_database(database_url, "kioku_setup_report") as url:
        fresh = make_engine(url)
        try:
            with KiokuStore(fresh, settings=KiokuSettings(database_url=url)) as store:
                assert store.setup() == "created"
                assert store.setup() == "unchanged"
                command.downgrade(alembic_config(fresh), "-1")
                assert store.setup() == "upgraded"
        finally:
            fresh.dispose()


def test_a_process_of_the_previous_release_still_updates(store: KiokuStore) -> None:
    """Migration 0017 keeps the five-argument update for processes not yet upgraded."""
    from tests.helpers import create_memory, make_world, memory_row

    world = make_world(store)
    memory_id = create_memory(
        world,
        {"memory_content": "Tea club meets on Mondays", "memory_scope": "server_wide"},
    )
    with store.transaction() as session:
        applied = session.execute(
            text(
                "SELECT applied FROM kioku_update_memory_versioned(:id, 'Tea club meets on "
                "Fridays', NULL, 'old-process', NULL)"
            ),
            {"id": memory_id},
        ).scalar_one()
    assert applied is True
    row = memory_row(store, memory_id)
    assert row is not None and row.content == "Tea club meets on Fridays"
    assert [h.actor_user_id for h in store.memory_history(memory_id)][-1] == "old-process"


def test_upgrading_to_0018_moves_short_term_memory_out_of_checkpoints(
    fresh_database: str,
) -> None:
    """Entries the previous release kept as checkpoint threads (one version per write)
    become rows holding their latest version; their threads go, other threads stay, and a
    registry row whose thread is gone is dropped."""
    import psycopg
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row

    from kioku._db.engine import libpq_url
    from kioku._stm.model import StmEntry, StmKey, StmMessage
    from kioku._stm.registry import StmRegistry

    engine = make_engine(fresh_database)
    key = StmKey("server", "s1", "general", 10000)
    gone = StmKey("server", "s1", "gone", 10000)
    at = datetime(2026, 1, 1, tzinfo=UTC)
    versions = [
        StmEntry(key, (StmMessage("user", "Ann", f"message {n}", at, "u1"),), last_updated=at)
        for n in range(2)
    ]

    def put(saver: PostgresSaver, thread: str, values: dict[str, Any]) -> None:
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = values
        checkpoint["channel_versions"] = {channel: checkpoint["id"] for channel in values}
        config = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
        metadata: Any = {"source": "update", "step": -1, "parents": {}}
        saver.put(config, checkpoint, metadata, dict(checkpoint["channel_versions"]))

    try:
        with engine.begin() as connection:
            connection.execute(text("CREATE EXTENSION IF NOT EXISTS vector"))
        command.upgrade(alembic_config(engine), "0017")
        with psycopg.connect(libpq_url(engine), autocommit=True, row_factory=dict_row) as conn:
            saver = PostgresSaver(conn)
            saver.setup()
            for version in versions:  # the old release wrote a checkpoint per version
                put(saver, key.thread_id, version.to_state())
            put(saver, "a-conversation", {"messages": "kept"})
        with engine.begin() as connection:
            for entry in (versions[-1], StmEntry(gone, last_updated=at)):
                connection.execute(
                    text(
                        "INSERT INTO stm_threads (thread_id, kind, owner_id, channel_id, "
                        "lineage_id, server_id, last_updated) VALUES "
                        "(:t, 'server', 's1', :c, 10000, 's1', :at)"
                    ),
                    {"t": entry.key.thread_id, "c": entry.key.channel_id, "at": at},
                )
        command.upgrade(alembic_config(engine), "head")
        with Session(engine) as session:
            stored = StmRegistry(session).stored([key, gone])
            threads = session.execute(text("SELECT DISTINCT thread_id FROM checkpoints")).all()
        assert list(stored) == [key.thread_id]
        assert [m.text for m in stored[key.thread_id].messages] == ["message 1"]
        assert [tuple(row) for row in threads] == [("a-conversation",)]
    finally:
        engine.dispose()
