"""The checkpointer's pool pings only idle connections, and survives dead ones."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import langgraph.checkpoint.postgres as postgres_saver
import psycopg
import pytest
from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint
from psycopg.rows import dict_row
from sqlalchemy import text

from kioku import KiokuSettings, KiokuStore
from kioku._db.checkpoint_pool import IdleCheck, checkpoint_pool
from kioku._db.embedded import EmbeddedPostgres
from kioku._db.engine import PING_AFTER_IDLE_SECONDS, make_engine
from kioku._db.saver import PostgresSaverForBoth


class Clock:
    """A clock that moves only when told."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _libpq(database_url: str) -> str:
    url = make_engine(database_url).url.set(drivername="postgresql")
    return url.render_as_string(hide_password=False)


def test_connections_in_use_are_not_pinged(database_url: str) -> None:
    idle = IdleCheck(1.0, clock=Clock())  # no time passes
    with checkpoint_pool(_libpq(database_url), idle_check=idle) as pool:
        for _ in range(20):
            with pool.connection() as connection:
                connection.execute("SELECT 1")
    assert idle.pings == 0


def test_an_idle_connection_is_pinged_and_a_dead_one_refused(database_url: str) -> None:
    clock = Clock()
    idle = IdleCheck(1.0, clock=clock)
    with psycopg.connect(_libpq(database_url), autocommit=True) as connection:
        idle.stamp(connection)  # made
        clock.now += 0.9
        idle.check(connection)  # checked out: a use
        assert idle.pings == 0
        clock.now += 0.9
        idle.check(connection)
        assert idle.pings == 0
        clock.now += 1.5
        idle.check(connection)
        assert idle.pings == 1
        connection.close()
        clock.now += 1.5
        with pytest.raises(psycopg.OperationalError):
            idle.check(connection)


def test_a_returned_connection_is_taken_back_at_once(database_url: str) -> None:
    """No ``reset`` callback: the pool takes a connection back in the returning thread
    (with one, each return is a task for a worker thread of the pool's)."""
    with checkpoint_pool(_libpq(database_url)) as pool:
        for _ in range(20):
            with pool.connection() as connection:
                connection.execute("SELECT 1")
            assert pool.get_stats()["pool_available"] >= 1


@pytest.fixture
def private_server(server_data_dir: Path) -> Iterator[EmbeddedPostgres]:
    """A server of this test's own, so stopping it disturbs no other test."""
    server = EmbeddedPostgres(server_data_dir)
    yield server
    server.stop()


def _round_trip(store: KiokuStore, thread_id: str) -> None:
    saver = store.checkpointer()
    config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    saved = saver.put(config, empty_checkpoint(), {}, {})
    assert saver.get_tuple(saved) is not None


def _wait_until_idle() -> None:
    """Let every pooled connection become idle long enough to be pinged on checkout."""
    time.sleep(PING_AFTER_IDLE_SECONDS * 1.5)


def test_the_checkpointer_survives_killed_backends_and_a_restart(
    private_server: EmbeddedPostgres,
) -> None:
    url = private_server.url
    store = KiokuStore(make_engine(url), settings=KiokuSettings(database_url=url))
    store.setup()
    _round_trip(store, "before")
    with store.engine.connect() as connection:
        connection.execute(
            text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'"
            )
        )
    _wait_until_idle()
    _round_trip(store, "after a killed backend")
    private_server.kill()
    private_server.start_again()
    _wait_until_idle()
    _round_trip(store, "after a restart")
    store.close()


def test_the_stores_checkpointer_serves_calls_side_by_side(store: KiokuStore) -> None:
    """On its pool, a call does not queue behind another (``PostgresSaver`` holds one lock
    around every call, which only a single shared connection needs)."""
    saver = store.checkpointer()
    entered, release = threading.Event(), threading.Event()

    def holding() -> None:
        with saver._cursor():  # a call under way, holding a connection of its own
            entered.set()
            release.wait(30)

    holder = threading.Thread(target=holding)
    holder.start()
    try:
        assert entered.wait(30)
        with ThreadPoolExecutor(1) as other:
            alone = {"configurable": {"thread_id": "nobody", "checkpoint_ns": ""}}
            assert other.submit(saver.get_tuple, alone).result(timeout=30) is None
    finally:
        release.set()
        holder.join()


def test_a_saver_on_one_connection_keeps_its_lock(database_url: str) -> None:
    with psycopg.connect(_libpq(database_url), autocommit=True, row_factory=dict_row) as conn:
        saver = PostgresSaverForBoth(conn)
        assert isinstance(saver.lock, type(threading.Lock()))


def test_prunes_in_one_process_run_one_at_a_time(
    store: KiokuStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two REPEATABLE READ prunes of one thread at once would fail against each other's
    deletes (a serialization failure); the second waits for the first instead."""
    saver = store.checkpointer()
    config: Any = {"configurable": {"thread_id": "pruned", "checkpoint_ns": ""}}
    checkpoint = empty_checkpoint()
    for step in range(4):
        checkpoint = create_checkpoint(checkpoint, None, step)
        config = saver.put(config, checkpoint, {"step": step}, {})
    inside: dict[str, threading.Event] = {"first": threading.Event(), "second": threading.Event()}
    release = threading.Event()
    real = postgres_saver._execute

    def gated(cursor: Any, statements: Any) -> Any:
        name = threading.current_thread().name
        inside[name].set()
        if name == "first":
            release.wait(30)  # the first prune under way
        return real(cursor, statements)

    monkeypatch.setattr(postgres_saver, "_execute", gated)
    errors: list[BaseException] = []

    def prune() -> None:
        try:
            saver.prune(["pruned"])
        except BaseException as exc:
            errors.append(exc)

    first = threading.Thread(target=prune, name="first")
    second = threading.Thread(target=prune, name="second")
    first.start()
    assert inside["first"].wait(30)
    second.start()
    try:
        assert not inside["second"].wait(0.5)  # never, while the first is under way
    finally:
        release.set()
        first.join(30)
        second.join(30)
    assert inside["second"].is_set() and errors == []
