"""The embedded server: started when no URL is set, reused across runs, stopped on close."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from toolkit import KiokuStore, load_settings
from toolkit.db.embedded import shared_buffers_bytes


def test_embedded_server_is_reused_and_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KIOKU_DATABASE_URL", raising=False)
    monkeypatch.setenv("KIOKU_DATA_DIR", str(tmp_path / "kioku"))
    pgdata = tmp_path / "kioku" / "pgdata"

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
            from toolkit.db.models import Server

            assert session.get(Server, "kept") is not None
    assert not (pgdata / "postmaster.pid").exists()
