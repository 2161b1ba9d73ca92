"""Which operating-system account runs the embedded PostgreSQL, and what it can reach.

PostgreSQL refuses to run as root. When kioku runs as root, the server runs as an
unprivileged account instead: ``KIOKU_EMBEDDED_USER`` if set, else the owner of an
existing data directory, else ``kioku-postgres`` (created once, with a warning).
Nothing here changes the permissions of a directory outside kioku's data directory.
"""

from __future__ import annotations

import logging
import os
import pwd
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from kioku._errors import ConfigurationError

logger = logging.getLogger(__name__)

DEFAULT_SERVER_ACCOUNT = "kioku-postgres"


@dataclass(frozen=True)
class OsAccount:
    """An operating-system account: its name, uid and groups."""

    name: str
    uid: int
    gid: int
    groups: frozenset[int]

    @classmethod
    def of(cls, entry: pwd.struct_passwd) -> OsAccount:
        """The account of a password-database entry, with its supplementary groups."""
        groups = frozenset(os.getgrouplist(entry.pw_name, entry.pw_gid))
        return cls(entry.pw_name, entry.pw_uid, entry.pw_gid, groups)

    def can_traverse(self, directory: Path) -> bool:
        """Whether this account may enter ``directory`` (ignoring ACLs)."""
        info = directory.stat()
        if self.uid == 0:
            return True
        if info.st_uid == self.uid:
            return bool(info.st_mode & stat.S_IXUSR)
        if info.st_gid in self.groups:
            return bool(info.st_mode & stat.S_IXGRP)
        return bool(info.st_mode & stat.S_IXOTH)

    def blocking_ancestor(self, path: Path) -> Path | None:
        """The first directory above ``path`` this account cannot enter, if any."""
        for directory in reversed(path.parents):
            if not self.can_traverse(directory):
                return directory
        return None


def running_as_root() -> bool:
    """Whether this process has root's effective uid."""
    return os.geteuid() == 0


def current_account() -> OsAccount:
    """The account this process runs as."""
    return OsAccount.of(pwd.getpwuid(os.geteuid()))


def server_account(pgdata: Path, wanted: str | None) -> OsAccount:
    """The account the embedded server runs as (see the module docstring).

    Raises:
        ConfigurationError: when the account does not exist and cannot be created.
    """
    if not running_as_root():
        return current_account()
    if wanted:
        try:
            return OsAccount.of(pwd.getpwnam(wanted))
        except KeyError:
            raise ConfigurationError(
                f"KIOKU_EMBEDDED_USER={wanted!r} is not an account on this machine; create it "
                "or unset the variable to let kioku create 'kioku-postgres'."
            ) from None
    if pgdata.exists() and pgdata.stat().st_uid != 0:
        try:
            return OsAccount.of(pwd.getpwuid(pgdata.stat().st_uid))
        except KeyError:
            pass
    try:
        return OsAccount.of(pwd.getpwnam(DEFAULT_SERVER_ACCOUNT))
    except KeyError:
        return _create_account(DEFAULT_SERVER_ACCOUNT)


def _create_account(name: str) -> OsAccount:
    useradd = shutil.which("useradd")
    if useradd is None:
        raise ConfigurationError(
            "PostgreSQL refuses to run as root and this machine has no `useradd`: create an "
            f"unprivileged account (e.g. {name!r}) and set KIOKU_EMBEDDED_USER to its name."
        )
    nologin = shutil.which("nologin") or "/bin/false"
    command = [useradd, "--system", "--user-group", "--no-create-home", "--shell", nologin, name]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        try:  # another process created it at the same moment
            return OsAccount.of(pwd.getpwnam(name))
        except KeyError:
            pass
        raise ConfigurationError(
            f"PostgreSQL refuses to run as root, and creating the account {name!r} for it "
            f"failed ({result.stderr.strip()}); create an unprivileged account and set "
            "KIOKU_EMBEDDED_USER to its name."
        )
    notice = (
        f"kioku: created the system account {name!r} to run the embedded PostgreSQL "
        "(PostgreSQL refuses to run as root). Set KIOKU_EMBEDDED_USER to use another account."
    )
    print(notice, file=sys.stderr)
    logger.warning(notice)
    return OsAccount.of(pwd.getpwnam(name))
