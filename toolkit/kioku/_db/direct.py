"""Prepared statements, but only where no pooler can sit between kioku and PostgreSQL.

A pooler in transaction mode (PgBouncer before 1.21, and the like) hands consecutive
transactions of one client to different server sessions, so a statement prepared in one
is missing (or already there) in the next. Prepared, the statements of an agent turn
skip their parse and plan: about an eighth of a turn on a direct connection.

``KIOKU_PREPARED_STATEMENTS`` (:data:`PreparedStatements`) decides: ``auto`` prepares on
a connection only when the server's own view of it is where the client connected to
(:func:`reaches_server_directly`): the same socket directory and port, or the same address
and port. Anything between them (a pooler, a proxy, NAT, a container's port mapping)
shows as a difference, and the connection prepares nothing.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.pq import TransactionStatus
from psycopg.rows import tuple_row

from kioku._config import PreparedStatements

OWN_THRESHOLD = 5
"""kioku's statements are prepared from their fifth run on a connection (psycopg's default)."""
CHECKPOINT_THRESHOLD = 0
"""The checkpointer's statements are prepared at once, as ``PostgresSaver.from_conn_string``
does."""


@dataclass(frozen=True)
class ClientEnd:
    """Where the client connected: a socket directory, or an address; and the port."""

    host: str
    """A socket directory (starting with ``/``) or a host name."""
    address: str
    """The address connected to (empty for a Unix socket)."""
    port: str


@dataclass(frozen=True)
class ServerEnd:
    """How the server sees the same connection."""

    address: str | None
    """``inet_server_addr()``: ``None`` when the client came over a Unix socket."""
    port: str | None
    """``inet_server_port()`` (``None`` over a Unix socket)."""
    listen_port: str
    """The server's ``port`` setting, which names its Unix sockets too."""
    socket_directories: tuple[str, ...]
    """The server's ``unix_socket_directories``."""


def reaches_server_directly(client: ClientEnd, server: ServerEnd) -> bool:
    """Whether nothing sits between the client and the server it ends up talking to.

    Over a Unix socket: the server saw a Unix-socket client, listens on that port and in
    that directory. Over TCP: the server saw the connection arrive at the very address and
    port the client connected to.
    """
    if client.host.startswith("/"):
        directories = {d.strip().rstrip("/") for d in server.socket_directories}
        return (
            server.address is None
            and server.listen_port == client.port
            and client.host.rstrip("/") in directories
        )
    if server.address is None or server.port != client.port:
        return False
    try:
        return ipaddress.ip_address(server.address) == ipaddress.ip_address(client.address)
    except ValueError:
        return False


_SERVER_END = (
    "SELECT host(inet_server_addr()), inet_server_port()::text, current_setting('port'), "
    "current_setting('unix_socket_directories', true)"
)


def client_end(connection: psycopg.Connection[Any]) -> ClientEnd | None:
    """Where ``connection`` connected (``None`` when libpq cannot say)."""
    info = connection.info
    try:
        address = info.hostaddr
    except psycopg.NotSupportedError:  # libpq < 12
        return None
    return ClientEnd(info.host, address, str(info.port))


def server_end(connection: psycopg.Connection[Any]) -> ServerEnd:
    """How the server sees ``connection``: one statement, outside any transaction.

    ``connection`` must be idle; it is left as it was (no BEGIN or COMMIT is sent).
    """
    autocommit = connection.autocommit
    connection.autocommit = True
    try:
        with connection.cursor(row_factory=tuple_row) as cursor:
            cursor.execute(_SERVER_END)
            row = cursor.fetchone()
    finally:
        connection.autocommit = autocommit
    address, port, listen_port, directories = row or (None, None, "", "")
    return ServerEnd(
        address,
        port,
        str(listen_port),
        tuple(d.strip() for d in str(directories or "").split(",") if d.strip()),
    )


REACHES_SERVER = "kioku_reaches_server"
"""Key of a pooled connection's ``info``: whether it reaches PostgreSQL directly."""


def reaches_server(info: Mapping[str, Any]) -> bool:
    """Whether the pooled connection of ``info`` was found to reach PostgreSQL directly."""
    return bool(info.get(REACHES_SERVER, False))


def prepares(
    connection: psycopg.Connection[Any], mode: PreparedStatements, *, reaches: bool | None = None
) -> bool:
    """Whether ``connection`` may prepare statements under ``mode``.

    ``reaches``: whether it reaches PostgreSQL directly, when known (else asked).
    """
    if mode != "auto":
        return mode == "on"
    return direct(connection) if reaches is None else reaches


def direct(connection: psycopg.Connection[Any]) -> bool:
    """Whether ``connection`` reaches PostgreSQL directly (asked once, outside a transaction)."""
    client = client_end(connection)
    if client is None or connection.info.transaction_status != TransactionStatus.IDLE:
        return False
    try:
        server = server_end(connection)
    except psycopg.Error:  # whatever answered is not a plain PostgreSQL session
        return False
    return reaches_server_directly(client, server)


def prepare_when_direct(
    connection: psycopg.Connection[Any],
    mode: PreparedStatements,
    threshold: int,
    *,
    reaches: bool | None = None,
) -> None:
    """Let ``connection`` prepare statements from their ``threshold``-th run, if it may.

    ``reaches``: as for :func:`prepares`.
    """
    may = prepares(connection, mode, reaches=reaches)
    connection.prepare_threshold = threshold if may else None
