"""The embedded server: reused across runs, stopped on close, private to its account."""

from __future__ import annotations

import os
import signal
import socket
import stat
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import text

from kioku import KiokuStore, load_settings
from kioku._db.embedded import EmbeddedPostgres
from kioku._db.embedded_host import SOCKET_NAME, shared_buffers_bytes
from kioku._errors import ConfigurationError

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (CI runs as root)")
NOBODY = 65534


def test_embedded_server_is_reused_and_stopped(
    server_data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KIOKU_DATA_DIR", str(server_data_dir))
    pgdata = server_data_dir / "pgdata"

    with KiokuStore.open(load_settings()) as store:
        store.setup()
        with store.accounts() as accounts:
            accounts.upsert_server("kept", "Kept across runs")
        assert (pgdata / "postmaster.pid").exists()
        with store.engine.connect() as connection:
            buffers = connection.execute(
                text("SELECT setting::bigint * 8192 FROM pg_settings WHERE name = 'shared_buffers'")
            ).scalar_one()
        assert buffers == shared_buffers_bytes()  # sized once, when the server was created
    assert not (pgdata / "postmaster.pid").exists(), "the server should stop on close"

    with KiokuStore.open(load_settings()) as store:
        store.setup()
        with store.sessions() as session:
            from kioku._db.models import Server

            assert session.get(Server, "kept") is not None
    assert not (pgdata / "postmaster.pid").exists()


def test_two_handles_share_the_server_until_the_last_leaves(server_data_dir: Path) -> None:
    first = EmbeddedPostgres(server_data_dir)
    second = EmbeddedPostgres(server_data_dir)
    first.stop()
    with psycopg.connect(_libpq(second)) as connection:
        assert connection.execute("SELECT 1").fetchone() == (1,)
    second.stop()
    assert not (server_data_dir / "pgdata" / "postmaster.pid").exists()


def test_a_user_killed_by_a_signal_still_gets_the_server_stopped(server_data_dir: Path) -> None:
    """``atexit`` does not run in a process killed by a signal; the reaper stops the server."""
    user = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from pathlib import Path\n"
            "from kioku._db.embedded import EmbeddedPostgres\n"
            f"EmbeddedPostgres(Path({str(server_data_dir)!r}))\n"
            "print('ready', flush=True)\n"
            "time.sleep(600)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert user.stdout is not None and user.stdout.readline().strip() == "ready"
        pid_file = server_data_dir / "pgdata" / "postmaster.pid"
        assert pid_file.exists()
        user.send_signal(signal.SIGKILL)
        user.wait(timeout=60)
        deadline = time.monotonic() + 120  # generous: the reaper checks every 2 s
        while pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not pid_file.exists(), "the reaper should stop a server nobody uses"
    finally:
        user.kill()
        user.wait(timeout=60)


def test_the_reaper_leaves_a_server_in_use_alone(server_data_dir: Path) -> None:
    server = EmbeddedPostgres(server_data_dir)
    try:
        observer = EmbeddedPostgres.observer(server.data_dir, server.account)
        assert observer.reap_if_unused() is False  # this process still uses it
        with psycopg.connect(_libpq(server)) as connection:
            assert connection.execute("SELECT 1").fetchone() == (1,)
    finally:
        server.stop()
    assert observer.reap_if_unused() is True  # stopped: nothing left to watch


@pytest.fixture
def running(server_data_dir: Path) -> Iterator[EmbeddedPostgres]:
    server = EmbeddedPostgres(server_data_dir)
    yield server
    server.stop()


def test_no_tcp_listener_and_no_trust_authentication(running: EmbeddedPostgres) -> None:
    with psycopg.connect(_libpq(running)) as connection:
        assert connection.execute("SHOW listen_addresses").fetchone() == ("",)
        rules = connection.execute("SELECT type, auth_method FROM pg_hba_file_rules").fetchall()
    assert rules == [("local", "peer")]
    assert running.socket_dir == running.pgdata
    assert stat.S_IMODE(running.pgdata.stat().st_mode) == 0o700


@as_root
def test_another_account_can_neither_connect_nor_read(running: EmbeddedPostgres) -> None:
    assert running.account.uid != 0, "PostgreSQL runs as an unprivileged account under root"
    assert _as_nobody_can_read(Path("/etc/passwd")), "the probe itself works"
    assert _as_nobody_can_connect(running.socket_dir / SOCKET_NAME) is False
    assert _as_nobody_can_read(running.pgdata / "PG_VERSION") is False
    assert _as_nobody_can_read(running.pgdata / "global" / "pg_control") is False


@as_root
def test_a_long_data_directory_keeps_its_socket_private_and_changes_no_parent(
    server_data_dir: Path,
) -> None:
    server_data_dir.chmod(0o755)  # the test's own base directory, open like /var/lib
    deep = server_data_dir / ("d" * 60) / ("e" * 60) / "kioku"
    deep.parent.mkdir(parents=True)
    watched = [Path.home(), *deep.parents]
    modes = {path: path.stat().st_mode for path in watched}

    server = EmbeddedPostgres(deep)
    try:
        assert server.socket_dir != server.pgdata, "the path is too long for a socket"
        assert stat.S_IMODE(server.socket_dir.stat().st_mode) == 0o700
        assert server.socket_dir.stat().st_uid == server.account.uid
        assert _as_nobody_can_connect(server.socket_dir / SOCKET_NAME) is False
        with psycopg.connect(_libpq(server)) as connection:
            assert connection.execute("SELECT 1").fetchone() == (1,)
    finally:
        server.stop()
    assert {path: path.stat().st_mode for path in watched} == modes
    assert not server.socket_dir.exists(), "the private socket directory is removed on stop"


@as_root
def test_a_data_directory_the_server_cannot_reach_is_refused_unchanged(
    server_data_dir: Path,
) -> None:
    locked = server_data_dir / "kioku"  # server_data_dir is 0700, owned by root
    before = server_data_dir.stat().st_mode
    with pytest.raises(ConfigurationError, match="cannot enter .*KIOKU_DATA_DIR"):
        EmbeddedPostgres(locked)
    assert server_data_dir.stat().st_mode == before


@as_root
def test_an_unknown_server_account_is_a_clear_error(server_data_dir: Path) -> None:
    with pytest.raises(ConfigurationError, match="KIOKU_EMBEDDED_USER='no-such-account'"):
        EmbeddedPostgres(server_data_dir, os_user="no-such-account")


def _libpq(server: EmbeddedPostgres) -> str:
    return server.url.replace("postgresql+psycopg://", "postgresql://", 1)


def _as_nobody(check: str, path: Path) -> bool:
    """Run one access check in a forked child that dropped to ``nobody``.

    Forked rather than spawned: the interpreter may live where ``nobody`` cannot go.
    """
    read_end, write_end = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads: the child
        pid = os.fork()  # only makes system calls, then leaves with os._exit
    if pid == 0:
        outcome = b"0"
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            if check == "connect":
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
                    client.connect(str(path))
            else:
                with open(path, "rb") as handle:
                    handle.read(1)
            outcome = b"1"
        except OSError:
            pass
        finally:
            os.write(write_end, outcome)
            os._exit(0)
    os.close(write_end)
    answer = os.read(read_end, 1)
    os.close(read_end)
    os.waitpid(pid, 0)
    return answer == b"1"


def _as_nobody_can_connect(path: Path) -> bool:
    return _as_nobody("connect", path)


def _as_nobody_can_read(path: Path) -> bool:
    return _as_nobody("read", path)


@as_root
def test_a_link_planted_in_pgdata_is_replaced_not_followed(server_data_dir: Path) -> None:
    victim = server_data_dir / "roots-file"
    victim.write_text("root's own\n")
    before = victim.stat()
    server = EmbeddedPostgres(server_data_dir)
    server.stop()
    (server.pgdata / "pg_ident.conf").unlink()
    (server.pgdata / "pg_ident.conf").symlink_to(victim)  # what the server's account could do

    server = EmbeddedPostgres(server_data_dir)
    server.stop()
    assert victim.read_text() == "root's own\n"
    assert (victim.stat().st_uid, victim.stat().st_mode) == (before.st_uid, before.st_mode)
    assert not (server.pgdata / "pg_ident.conf").is_symlink()


def test_a_stale_pid_file_naming_another_live_process_is_cleared(server_data_dir: Path) -> None:
    server = EmbeddedPostgres(server_data_dir)
    server.stop()
    pid_file = server.pgdata / "postmaster.pid"
    lines = [str(os.getpid()), str(server.pgdata), "0", "5432", str(server.pgdata), "", "0 0"]
    pid_file.write_text("\n".join([*lines, "ready", ""]))  # this pytest process: alive

    again = EmbeddedPostgres(server_data_dir)
    try:
        with psycopg.connect(_libpq(again)) as connection:
            assert connection.execute("SELECT 1").fetchone() == (1,)
    finally:
        again.stop()


def test_a_data_directory_the_shell_would_interpret_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="cannot carry safely"):
        EmbeddedPostgres(tmp_path / "data$(id>PWNED)")
    assert not (tmp_path / "data$(id>PWNED)").exists()


def test_an_exited_process_not_yet_reaped_counts_as_gone() -> None:
    """A zombie (e.g. a reaper this process started and never waited for) is not alive."""
    from kioku._db.embedded_host import alive as _alive

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    stat = Path(f"/proc/{child.pid}/stat")
    deadline = time.monotonic() + 60
    while stat.exists() and " Z " not in stat.read_text() and time.monotonic() < deadline:
        time.sleep(0.1)
    try:
        if stat.exists():  # Linux: the child is a zombie until we wait for it
            assert not _alive(child.pid)
    finally:
        child.wait(timeout=60)
    assert not _alive(child.pid)
