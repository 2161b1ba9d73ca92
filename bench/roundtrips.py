"""Counting database round trips: a loopback proxy in front of PostgreSQL.

A round trip is the client sending after it last heard from the server (or for the
first time) on one connection: pipelined statements sent together count once, a query
answered and followed by another counts twice. Connections are opened through the
proxy's URL; :attr:`RoundTripProxy.count` sums every connection's round trips.
Used only to count, never to time (the proxy adds latency).
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading
from pathlib import Path

from sqlalchemy.engine import make_url

Upstream = tuple[str, int] | str
"""A PostgreSQL server's address: (host, port), or the path of its Unix socket."""


def upstream_of(database_url: str) -> Upstream:
    """The server address behind SQLAlchemy ``database_url`` (a socket dir in ``?host=``)."""
    url = make_url(database_url)
    socket_dir = url.query.get("host")
    if socket_dir:
        return str(Path(str(socket_dir)) / f".s.PGSQL.{url.port or 5432}")
    return (url.host or "127.0.0.1", url.port or 5432)


def listen_loopback() -> socket.socket:
    """A listening socket on a free 127.0.0.1 port."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    return listener


def proxied_url(database_url: str, port: int) -> str:
    """``database_url`` pointed at 127.0.0.1:``port`` (TCP, no socket directory)."""
    url = make_url(database_url).set(host="127.0.0.1", port=port, query={})
    return url.render_as_string(hide_password=False)


def connect_upstream(upstream: Upstream) -> socket.socket:
    """A connected socket to ``upstream``."""
    family = socket.AF_UNIX if isinstance(upstream, str) else socket.AF_INET
    server = socket.socket(family, socket.SOCK_STREAM)
    server.connect(upstream)
    return server


class RoundTripProxy:
    """Forwards 127.0.0.1:``port`` to the database behind ``database_url``, counting."""

    def __init__(self, database_url: str) -> None:
        """Listen on a free loopback port."""
        self._upstream = upstream_of(database_url)
        self._listener = listen_loopback()
        self.url = proxied_url(database_url, self._listener.getsockname()[1])
        self._lock = threading.Lock()
        self.count = 0
        self.log: list[bytes] | None = None
        """Set to a list to keep the first bytes of every round trip (debugging)."""
        threading.Thread(target=self._accept, daemon=True).start()

    def reset(self) -> int:
        """The count so far; starts counting again from zero."""
        with self._lock:
            count, self.count = self.count, 0
        return count

    def close(self) -> None:
        """Stop listening (open connections keep working until closed)."""
        self._listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = connect_upstream(self._upstream)
            threading.Thread(target=self._pump, args=(client, server), daemon=True).start()

    def _pump(self, client: socket.socket, server: socket.socket) -> None:
        selector = selectors.DefaultSelector()
        selector.register(client, selectors.EVENT_READ, server)
        selector.register(server, selectors.EVENT_READ, client)
        awaiting_reply = False
        try:
            while True:
                for key, _ in selector.select():
                    source = key.fileobj
                    assert isinstance(source, socket.socket)
                    data = source.recv(1 << 16)
                    if not data:
                        return
                    if source is client and not awaiting_reply:
                        with self._lock:
                            self.count += 1
                            if self.log is not None:
                                self.log.append(data[:120])
                        awaiting_reply = True
                    elif source is server:
                        awaiting_reply = False
                    key.data.sendall(data)
        except OSError:
            return
        finally:
            selector.close()
            for s in (client, server):
                with contextlib.suppress(OSError):
                    s.close()
