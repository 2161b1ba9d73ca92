"""A database "across a network": a loopback proxy adding a fixed latency each way.

Every chunk of bytes is forwarded ``delay`` after it arrived, in order, per direction and
per connection: a latency, not a bandwidth limit (data arriving while an earlier chunk
waits is delayed by its own ``delay`` only, never queued behind the earlier wait). A round
trip through the proxy thus takes about ``2 x delay`` longer than a direct one.

The proxy runs in a process of its own (:func:`delayed`), so its threads never compete
for the benchmark process's GIL.

Run: .venv/bin/python -m bench.delay_proxy DATABASE_URL [--delay-ms 1] (prints its URL).
"""

from __future__ import annotations

import argparse
import contextlib
import queue
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from bench.roundtrips import Upstream, connect_upstream, listen_loopback, proxied_url, upstream_of

CHUNK = 1 << 16

Chunks = queue.SimpleQueue[tuple[float, bytes]]
"""Chunks of one direction of a connection, each with the time it is due."""


class DelayProxy:
    """Forwards 127.0.0.1:``port`` to ``database_url``'s server, ``delay_s`` later each way."""

    def __init__(self, database_url: str, delay_s: float) -> None:
        """Listen on a free loopback port (serving starts with :meth:`serve`)."""
        self.delay_s = delay_s
        self._upstream: Upstream = upstream_of(database_url)
        self._listener = listen_loopback()
        self.url = proxied_url(database_url, self._listener.getsockname()[1])

    def serve(self) -> None:
        """Accept connections until the listener is closed."""
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            server = connect_upstream(self._upstream)
            if server.family == socket.AF_INET:
                server.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            for source, target in ((client, server), (server, client)):
                self._direction(source, target)

    def _direction(self, source: socket.socket, target: socket.socket) -> None:
        """Two threads: one stamps chunks as they arrive, one sends each when it is due."""
        chunks: Chunks = queue.SimpleQueue()
        threading.Thread(target=self._receive, args=(source, chunks), daemon=True).start()
        threading.Thread(target=self._send, args=(chunks, target), daemon=True).start()

    def _receive(
        self, source: socket.socket, chunks: queue.SimpleQueue[tuple[float, bytes]]
    ) -> None:
        """Queue every chunk with the time it is due; an empty chunk marks the end."""
        while True:
            try:
                data = source.recv(CHUNK)
            except OSError:
                data = b""
            chunks.put((time.monotonic() + self.delay_s, data))
            if not data:
                return

    @staticmethod
    def _send(chunks: Chunks, target: socket.socket) -> None:
        """Send each chunk at its due time (at once when already late), in order."""
        while True:
            due, data = chunks.get()
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            if not data:
                with contextlib.suppress(OSError):
                    target.shutdown(socket.SHUT_WR)
                return
            try:
                target.sendall(data)
            except OSError:
                return


@contextmanager
def delayed(database_url: str, delay_ms: float) -> Iterator[str]:
    """The URL of a :class:`DelayProxy` to ``database_url`` running in a child process.

    The child is ended (by its own id) when the block exits.
    """
    child = subprocess.Popen(
        [sys.executable, "-m", "bench.delay_proxy", database_url, "--delay-ms", str(delay_ms)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        url = child.stdout.readline().strip()
        if not url:
            raise RuntimeError(f"the delay proxy did not start (exit code {child.poll()})")
        yield url
    finally:
        child.terminate()
        child.wait(timeout=10)


def main(argv: list[str] | None = None) -> None:
    """Print the proxy's URL, then forward until killed."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("database_url")
    parser.add_argument("--delay-ms", type=float, default=1.0, help="added latency each way")
    args = parser.parse_args(argv)
    proxy = DelayProxy(args.database_url, args.delay_ms / 1000)
    print(proxy.url, flush=True)
    proxy.serve()


if __name__ == "__main__":
    main()
