"""PgBouncer in transaction mode in front of the test server, for the pooler tests.

Debian's ``pgbouncer`` (1.18) with its defaults but for what a pooler in production has:
``pool_mode = transaction`` and a server pool smaller than the number of clients. It
refuses to run as root, so under root it runs as the embedded server's account (which the
server's peer authentication lets in as ``postgres``); its configuration and log live in
a private temporary directory of that account's. It listens on 127.0.0.1 only, on a free
port, and lets local clients in without a password (``auth_type = trust``).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import URL, make_url

from kioku._db.os_account import OsAccount, running_as_root

START_TIMEOUT_S = 120
QUERY_WAIT_S = 120
"""How long PgBouncer lets a client wait for a server connection by default (its
``query_wait_timeout``)."""
"""How long PgBouncer may take to listen: generous, a busy machine is slow."""
_BIND_FAILED = "bind"


@dataclass(frozen=True)
class Pooler:
    """A running PgBouncer: where clients reach it, and its log."""

    host: str
    port: int
    user: str
    log_file: Path

    def url(self, database: str) -> str:
        """The SQLAlchemy URL (psycopg 3) of ``database`` through the pooler."""
        return URL.create(
            "postgresql+psycopg",
            username=self.user,
            host=self.host,
            port=self.port,
            database=database,
        ).render_as_string(hide_password=False)

    def log(self) -> str:
        """What PgBouncer logged so far."""
        return self.log_file.read_text(errors="replace") if self.log_file.exists() else ""


def pgbouncer_binary() -> str | None:
    """The ``pgbouncer`` program (Debian installs it in ``/usr/sbin``), if installed."""
    return shutil.which("pgbouncer") or shutil.which("pgbouncer", path="/usr/sbin:/usr/bin")


def server_line(server_url: str) -> tuple[str, str]:
    """PgBouncer's connection string for ``server_url``'s server, and the user it logs in as.

    Any database name a client asks for is passed through (``*``), so tests may use
    databases of their own.
    """
    url = make_url(server_url)
    host = url.query.get("host") or url.host or "localhost"
    parts = {"host": host if isinstance(host, str) else host[0], "port": url.port or 5432}
    user = url.username or "postgres"
    parts["user"] = user
    if url.password:
        parts["password"] = str(url.password)
    return " ".join(f"{key}={value}" for key, value in parts.items()), user


def config(
    directory: Path,
    server: str,
    user: str,
    port: int,
    pool_size: int,
    query_wait_s: int = QUERY_WAIT_S,
) -> str:
    """``pgbouncer.ini``: transaction pooling, ``pool_size`` server connections per database.

    A client waiting ``query_wait_s`` seconds for a server connection is disconnected.
    """
    return "\n".join(
        [
            "[databases]",
            f"* = {server}",
            "[pgbouncer]",
            "listen_addr = 127.0.0.1",
            f"listen_port = {port}",
            "unix_socket_dir =",
            "auth_type = trust",
            f"auth_file = {directory / 'userlist.txt'}",
            "pool_mode = transaction",
            f"default_pool_size = {pool_size}",
            f"query_wait_timeout = {query_wait_s}",
            "max_client_conn = 500",
            f"logfile = {directory / 'pgbouncer.log'}",
            "",
        ]
    )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


@contextmanager
def _private_directory(account: OsAccount | None) -> Iterator[Path]:
    directory = Path(tempfile.mkdtemp(prefix="kioku-pgbouncer-"))  # 0700
    try:
        if account is not None:
            os.chown(directory, account.uid, account.gid)
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


class PoolerFailed(RuntimeError):
    """PgBouncer did not come up."""


def _start(
    binary: str, directory: Path, account: OsAccount | None, ini: str, port: int
) -> subprocess.Popen[bytes]:
    path = directory / "pgbouncer.ini"
    path.write_text(ini)
    if account is not None:
        os.chown(path, account.uid, account.gid)
    process = subprocess.Popen(
        [binary, str(path)],
        cwd=directory,
        user=account.uid if account is not None else None,
        group=account.gid if account is not None else None,
        extra_groups=[] if account is not None else None,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + START_TIMEOUT_S
    while not _listening(port):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            process.wait()
            log = directory / "pgbouncer.log"
            raise PoolerFailed(log.read_text(errors="replace") if log.exists() else "no log")
        time.sleep(0.05)
    return process


@contextmanager
def pgbouncer(
    server_url: str,
    *,
    account: OsAccount | None,
    pool_size: int = 2,
    query_wait_s: int = QUERY_WAIT_S,
) -> Iterator[Pooler]:
    """Run PgBouncer in front of ``server_url``'s server until the block ends.

    Args:
        server_url: the server (any database of it is reachable through the pooler).
        account: the account to run as under root (one the server lets in); ignored
            otherwise.
        pool_size: server connections per database and user.
        query_wait_s: how long a client may wait for one (PgBouncer's default, 120 s).

    Raises:
        PoolerFailed: when ``pgbouncer`` is missing or does not come up (with its log).
    """
    binary = pgbouncer_binary()
    if binary is None:
        raise PoolerFailed("pgbouncer is not installed")
    runs_as = account if running_as_root() else None
    server, user = server_line(server_url)
    with _private_directory(runs_as) as directory:
        (directory / "userlist.txt").write_text(f'"{user}" ""\n')
        for attempt in range(3):  # another program may take the free port first
            port = _free_port()
            try:
                process = _start(
                    binary,
                    directory,
                    runs_as,
                    config(directory, server, user, port, pool_size, query_wait_s),
                    port,
                )
                break
            except PoolerFailed as exc:
                if _BIND_FAILED not in str(exc) or attempt == 2:
                    raise
        try:
            yield Pooler("127.0.0.1", port, user, directory / "pgbouncer.log")
        finally:
            process.terminate()
            process.wait()
