"""Fixtures: a real PostgreSQL with pgvector (embedded unless KIOKU_DATABASE_URL is set)."""

from __future__ import annotations

import itertools
import os
import pwd
import shutil
import socket
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings as hypothesis_settings
from sqlalchemy import Engine, text

from bench.common import new_database
from kioku import KiokuSettings, KiokuStore
from kioku._db.embedded import EmbeddedPostgres
from kioku._db.engine import make_engine
from kioku._db.os_account import OsAccount
from tests.helpers import SETTING_VARIABLES, TABLES
from tests.pgbouncer import QUERY_WAIT_S, Pooler, pgbouncer, pgbouncer_binary

# Property tests draw the same examples on every run (fixed seeds, no flaky CI).
hypothesis_settings.register_profile("kioku", derandomize=True)
hypothesis_settings.load_profile("kioku")


CALLER_DATABASE_URL = os.environ.get("KIOKU_DATABASE_URL")
"""The one setting the caller may pass in: run the tests against that server."""


@pytest.fixture(scope="session", autouse=True)
def _caller_settings_ignored() -> Iterator[None]:
    """Tests see kioku's defaults unless they set a variable themselves."""
    with pytest.MonkeyPatch.context() as patch:
        for name in SETTING_VARIABLES:
            patch.delenv(name, raising=False)
        # The default embedder depends on what is installed; tests pin the deterministic one
        # (tests of the choice itself set their own).
        patch.setenv("KIOKU_EMBEDDINGS", "hashing")
        yield


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail any test that tries to reach a host other than this machine."""
    real_connect = socket.socket.connect

    def guarded(self: socket.socket, address: Any) -> Any:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            host = address[0]
            if host not in ("127.0.0.1", "::1", "localhost"):
                raise RuntimeError(f"tests must not reach the network (tried {address!r})")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)


@contextmanager
def server_directory() -> Iterator[Path]:
    """A fresh data directory for an embedded server, removed afterwards.

    Not under pytest's ``/tmp/pytest-of-<user>``: another pytest session may reset that
    directory to 0700, locking out the unprivileged account the server runs as under root.
    """
    directory = Path(tempfile.mkdtemp(prefix="kioku-tests-"))
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def server_data_dir() -> Iterator[Path]:
    """A data directory of this test's own for an embedded server."""
    with server_directory() as directory:
        yield directory


@pytest.fixture(scope="session")
def embedded_pg(_caller_settings_ignored: None) -> Iterator[EmbeddedPostgres | None]:
    if CALLER_DATABASE_URL:
        yield None
        return
    with server_directory() as directory:
        server = EmbeddedPostgres(directory)
        yield server
        server.stop()


@pytest.fixture(scope="session")
def database_url(embedded_pg: EmbeddedPostgres | None) -> str:
    if embedded_pg is None:
        return CALLER_DATABASE_URL
    return embedded_pg.url


@pytest.fixture(scope="session")
def engine(database_url: str) -> Iterator[Engine]:
    engine = make_engine(database_url, pool_size=20)
    store = KiokuStore(engine, settings=KiokuSettings(database_url=database_url))
    store.setup()
    store.close()
    yield engine
    engine.dispose()


@pytest.fixture
def settings(database_url: str) -> KiokuSettings:
    return KiokuSettings(database_url=database_url, data_dir=Path("/nonexistent"))


@pytest.fixture
def store(engine: Engine, settings: KiokuSettings) -> Iterator[KiokuStore]:
    """A store on a clean database; tables are emptied after each test."""
    store = KiokuStore(engine, settings=settings)
    yield store
    store.close()
    with engine.begin() as connection:
        connection.execute(text(f"TRUNCATE {TABLES} RESTART IDENTITY CASCADE"))


@pytest.fixture
def kioku_cli(
    store: KiokuStore,
    database_url: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> Callable[..., str]:
    """Runs the ``kioku`` command in this process on the test database; returns its stdout."""
    from kioku.cli import main

    monkeypatch.setenv("KIOKU_DATABASE_URL", database_url)

    def run(*args: str) -> str:
        assert main(list(args)) == 0
        return capsys.readouterr().out

    return run


@pytest.fixture
def fresh_database(database_url: str) -> Iterator[str]:
    """The URL of a new, empty database of this test's own (dropped afterwards)."""
    with new_database(database_url, f"kioku_fresh_{os.getpid()}") as url:
        yield url


@contextmanager
def _pgbouncer_before(
    database_url: str, embedded_pg: EmbeddedPostgres | None, pool_size: int, query_wait_s: int
) -> Iterator[Pooler]:
    """PgBouncer in transaction mode, ``pool_size`` server connections per database.

    Under root it runs as the embedded server's account (or ``nobody`` in front of the
    caller's server). Skipped where ``pgbouncer`` is not installed (``.ci/run`` installs it).
    """
    if pgbouncer_binary() is None:
        pytest.skip("pgbouncer is not installed (.ci/run installs it: apt-get install pgbouncer)")
    account = embedded_pg.account if embedded_pg else OsAccount.of(pwd.getpwnam("nobody"))
    with pgbouncer(
        database_url, account=account, pool_size=pool_size, query_wait_s=query_wait_s
    ) as running:
        yield running


@pytest.fixture(scope="session")
def pooler(database_url: str, embedded_pg: EmbeddedPostgres | None) -> Iterator[Pooler]:
    """PgBouncer in transaction mode, two server connections per database, before the server."""
    with _pgbouncer_before(
        database_url, embedded_pg, pool_size=2, query_wait_s=QUERY_WAIT_S
    ) as running:
        yield running


@pytest.fixture
def pooler_of_one(database_url: str, embedded_pg: EmbeddedPostgres | None) -> Iterator[Pooler]:
    """PgBouncer in transaction mode with one server connection per database.

    A client waits 20 s for it at most (not 120), so a test that needs two fails in time.
    """
    with _pgbouncer_before(database_url, embedded_pg, pool_size=1, query_wait_s=20) as running:
        yield running


_POOLED_DATABASES = itertools.count()


@pytest.fixture
def pooled_empty_database(database_url: str, pooler: Pooler) -> Iterator[str]:
    """The URL, through :func:`pooler`, of a new, empty database of this test's own.

    Dropped afterwards (from a direct connection).
    """
    # A name of its own: PgBouncer keeps what a database's first server session reported.
    name = f"kioku_pooled_{os.getpid()}_{next(_POOLED_DATABASES)}"
    with new_database(database_url, name):
        yield pooler.url(name)


@pytest.fixture
def pooled_database(pooled_empty_database: str) -> str:
    """:func:`pooled_empty_database`, set up through the pooler."""
    settings = KiokuSettings(database_url=pooled_empty_database, sweep_interval_minutes=0)
    with KiokuStore.open(settings) as store:
        store.setup()
    return pooled_empty_database
