"""Statements are prepared only where nothing can sit between kioku and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from sqlalchemy import text

from kioku import KiokuSettings, KiokuStore
from kioku._config import PreparedStatements
from kioku._db.direct import (
    CHECKPOINT_THRESHOLD,
    OWN_THRESHOLD,
    ClientEnd,
    ServerEnd,
    reaches_server,
    reaches_server_directly,
)
from kioku._db.embedded import EmbeddedPostgres
from kioku._db.engine import make_engine
from tests.lossy_proxy import LossyProxy
from tests.pgbouncer import Pooler

SOCKET = ClientEnd("/run/pg", "", "5432")
TCP = ClientEnd("db.internal", "10.0.0.5", "5432")


def _server(
    address: str | None = None,
    port: str | None = None,
    listen_port: str = "5432",
    directories: tuple[str, ...] = ("/run/pg",),
) -> ServerEnd:
    return ServerEnd(address, port, listen_port, directories)


@pytest.mark.parametrize(
    ("client", "server", "direct"),
    [
        (SOCKET, _server(), True),
        (ClientEnd("/run/pg/", "", "5432"), _server(directories=("/tmp", " /run/pg")), True),
        (SOCKET, _server(directories=("/tmp",)), False),  # another server's socket, same port
        (SOCKET, _server(listen_port="5433"), False),  # a pooler's socket (its own port)
        (SOCKET, _server("127.0.0.1", "5432"), False),  # the server saw a TCP client
        (TCP, _server("10.0.0.5", "5432"), True),
        (TCP, _server("10.0.0.7", "5432"), False),  # a pooler on another host
        (TCP, _server("10.0.0.5", "6432"), False),  # forwarded to another port
        (TCP, _server(None, None), False),  # a pooler reaching the server over its socket
        (ClientEnd("localhost", "::1", "5432"), _server("0:0:0:0:0:0:0:1", "5432"), True),
        (ClientEnd("localhost", "", "5432"), _server("127.0.0.1", "5432"), False),
    ],
)
def test_only_a_connection_the_server_sees_as_made_is_direct(
    client: ClientEnd, server: ServerEnd, direct: bool
) -> None:
    assert reaches_server_directly(client, server) is direct


def _thresholds(store: KiokuStore) -> tuple[int | None, int | None]:
    """The prepare thresholds of the store's engine and checkpointer connections."""
    with store.engine.connect() as connection:
        driver = connection.connection.driver_connection
        assert isinstance(driver, psycopg.Connection)
        own = driver.prepare_threshold
    with store.checkpointer().conn.connection() as checkpoint:  # type: ignore[union-attr]
        return own, checkpoint.prepare_threshold


def _reaches(store: KiokuStore) -> bool:
    """Whether the store's engine found its connection to reach the server directly."""
    with store.engine.connect() as connection:
        return reaches_server(connection.info)


@pytest.fixture
def open_store(database_url: str) -> Iterator[Any]:
    made: list[KiokuStore] = []

    def open_(url: str, mode: PreparedStatements = "auto") -> KiokuStore:
        store = KiokuStore.open(KiokuSettings(database_url=url, prepared_statements=mode))
        made.append(store)
        return store

    yield open_
    for store in made:
        store.close()


def test_the_embedded_server_is_reached_directly_and_statements_are_prepared(
    embedded_pg: EmbeddedPostgres | None, database_url: str, open_store: Any
) -> None:
    if embedded_pg is None:
        pytest.skip("KIOKU_DATABASE_URL's server may sit behind a pooler")
    store = open_store(database_url)
    assert _thresholds(store) == (OWN_THRESHOLD, CHECKPOINT_THRESHOLD)
    assert _reaches(store)
    with store.engine.connect() as connection:
        for _ in range(OWN_THRESHOLD + 1):
            connection.execute(text("SELECT CAST(:id AS int) + 1"), {"id": 1})
        prepared = connection.execute(text("SELECT count(*) FROM pg_prepared_statements"))
        assert prepared.scalar_one() >= 1


def test_through_a_proxy_nothing_is_prepared(database_url: str, open_store: Any) -> None:
    """A proxy that passes everything on (startup options too) looks like a pooler."""
    proxy = LossyProxy(database_url, [b"never sent by anyone"], refuse_after_drop=False)
    try:
        assert _thresholds(open_store(proxy.url)) == (None, None)
        prepared = open_store(proxy.url, "on")
        assert _thresholds(prepared) == (OWN_THRESHOLD, CHECKPOINT_THRESHOLD)
        assert not _reaches(prepared)  # what is between still counts (rankings sent ahead)
    finally:
        proxy.close()


def test_off_prepares_nothing(
    embedded_pg: EmbeddedPostgres | None, database_url: str, open_store: Any
) -> None:
    store = open_store(database_url, "off")
    assert _thresholds(store) == (None, None)
    if embedded_pg is not None:
        assert _reaches(store)  # told apart whatever the mode


def test_behind_pgbouncer_nothing_is_prepared(pooled_database: str, pooler: Pooler) -> None:
    assert _thresholds_of_url(pooled_database) == (None, None)


def _thresholds_of_url(url: str) -> tuple[int | None, int | None]:
    engine = make_engine(url)
    store = KiokuStore(engine, settings=KiokuSettings(database_url=url))
    try:
        return _thresholds(store)
    finally:
        store.close()
