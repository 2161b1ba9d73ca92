"""Stops an embedded server once no process uses it: ``python -m kioku._db.reaper DIR ACCOUNT``.

Started (once per server) by :class:`~kioku._db.embedded.EmbeddedPostgres`; it checks every
few seconds and exits when the server is stopped, by it or by its last user.
"""

from __future__ import annotations

import pwd
import sys
import time
from pathlib import Path

from kioku._db.embedded import EmbeddedPostgres
from kioku._db.os_account import OsAccount

CHECK_INTERVAL_S = 2.0


def main(argv: list[str]) -> int:
    """Watch the server of the data directory ``argv[0]``, run by the account ``argv[1]``."""
    data_dir, account_name = Path(argv[0]), argv[1]
    observer = EmbeddedPostgres.observer(data_dir, OsAccount.of(pwd.getpwnam(account_name)))
    while True:
        time.sleep(CHECK_INTERVAL_S)
        try:
            if observer.reap_if_unused():
                return 0
        except Exception:  # a data directory removed or changed under it: nothing to watch
            return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
