"""A loopback TCP proxy in front of PostgreSQL that loses the reply to one chosen message.

Once the client has sent a message containing each of ``trigger``'s byte strings in
order, the proxy lets the server finish the exchange (up to ReadyForQuery, so the server
has committed), swallows the reply and drops both connections: the server did the work,
the client never hears of it. ``refuse_after_drop`` makes the database look down from
then on.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Sequence
from pathlib import Path

from sqlalchemy.engine import make_url

READY_FOR_QUERY = b"Z\x00\x00\x00\x05"


class LossyProxy:
    """Forwards 127.0.0.1:``port`` to the database behind ``database_url``."""

    def __init__(self, database_url: str, trigger: Sequence[bytes], *, refuse_after_drop: bool):
        """Listen on a free loopback port; see the module docstring."""
        url = make_url(database_url)
        socket_dir = url.query.get("host")
        self._upstream: tuple[str, int] | str = (
            str(Path(str(socket_dir)) / f".s.PGSQL.{url.port or 5432}")
            if socket_dir
            else (url.host or "127.0.0.1", url.port or 5432)
        )
        self._trigger = list(trigger)
        self._refuse = refuse_after_drop
        self.dropped = threading.Event()
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen()
        self.port = self._listener.getsockname()[1]
        self.url = url.set(host="127.0.0.1", port=self.port, query={}).render_as_string(
            hide_password=False
        )
        self._lock = threading.Lock()
        self._seen = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        """Stop listening."""
        self._listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self.dropped.is_set() and self._refuse:
                client.close()
                continue
            family = socket.AF_UNIX if isinstance(self._upstream, str) else socket.AF_INET
            server = socket.socket(family, socket.SOCK_STREAM)
            server.connect(self._upstream)
            armed = threading.Event()
            threading.Thread(target=self._client_side, args=(client, server, armed)).start()
            threading.Thread(target=self._server_side, args=(server, client, armed)).start()

    def _client_side(
        self, client: socket.socket, server: socket.socket, armed: threading.Event
    ) -> None:
        try:
            while data := client.recv(65536):
                with self._lock:
                    waiting = not self.dropped.is_set() and self._seen < len(self._trigger)
                    if waiting and self._trigger[self._seen] in data:
                        self._seen += 1
                        if self._seen == len(self._trigger):
                            armed.set()
                server.sendall(data)
        except OSError:
            pass

    def _server_side(
        self, server: socket.socket, client: socket.socket, armed: threading.Event
    ) -> None:
        swallowed = b""
        try:
            while data := server.recv(65536):
                if armed.is_set():
                    swallowed += data
                    if READY_FOR_QUERY in swallowed:
                        self.dropped.set()
                        break
                    continue
                client.sendall(data)
        except OSError:
            pass
        for end in (client, server):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)
            end.close()
