"""``store.export_user`` / ``kioku export --user``: what erasure would remove, shown first."""

from __future__ import annotations

import json

from kioku import KiokuStore
from tests.test_erasure import _bridged, seed


def test_the_export_holds_what_erasure_removes_and_nothing_else(store: KiokuStore) -> None:
    world, ids = seed(store)
    bridged = _bridged(world, "{user} keeps MAX-PRIVATE-FACT")
    exported = store.export_user("u-alice")
    text = json.dumps(exported, ensure_ascii=False)
    assert "ALICE-LIKES-JASMINE" in text and "ALICE-GLOBAL-FACT" in text
    assert "ALICE-OLD-FACT" in text  # a deleted memory lives on in its history
    assert "ALICE-CHAT-LINE" in text  # short-term memory and the conversation thread
    assert "BOB" not in text and "SERVER-WIDE-FACT" not in text
    assert exported["directory"]["id"] == "u-alice"
    assert {m["id"] for m in exported["memories"]} >= {ids["kept"]}
    assert exported["conversations"] and exported["short_term_memory"]

    max_export = store.export_user("u-bridge")
    assert [m["id"] for m in max_export["memories"]] == [bridged]

    store.erase_user("u-alice")
    after = store.export_user("u-alice")
    assert after["memories"] == [] and after["directory"] is None
    assert "ALICE-" not in json.dumps(after, ensure_ascii=False)


def test_kioku_export_prints_the_json(store: KiokuStore, database_url: str) -> None:
    import os
    import subprocess
    import sys

    seed(store)
    environment = {k: v for k, v in os.environ.items() if not k.startswith("KIOKU_")}
    environment |= {"KIOKU_DATABASE_URL": database_url, "KIOKU_EMBEDDINGS": "hashing"}
    done = subprocess.run(
        [sys.executable, "-m", "kioku.cli", "export", "--user", "u-alice"],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    exported = json.loads(done.stdout)
    assert exported["user_id"] == "u-alice" and exported["memories"]
