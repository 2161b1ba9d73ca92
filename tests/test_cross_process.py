"""Coherent across processes (issue #11, 5): a write committed by one OS process is
reflected by the next context build, search and tool call of another."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from kioku import KiokuStore
from kioku._memory.cache import ScopeCache
from tests.helpers import World, create_memory, make_world, update_memory


class Worker:
    def __init__(self, database_url: str) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("KIOKU_")}
        env["KIOKU_EMBEDDINGS"] = "hashing"  # what the parent process uses
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.process_worker", database_url],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )

    def ask(self, **request: Any) -> Any:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        assert line, "the worker process died"
        return json.loads(line)

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)


@pytest.fixture
def worker(database_url: str, store: KiokuStore) -> Iterator[Worker]:
    worker = Worker(database_url)
    yield worker
    worker.close()


def test_writes_of_one_process_are_seen_by_the_next_read_of_another(
    store: KiokuStore, worker: Worker
) -> None:
    world: World = make_world(store)
    lineage = world.persona.lineage_id
    personal = {"memory_scope": "target_user", "target_user": "Alice"}
    doomed = create_memory(world, {"memory_content": "DOOMED-FACT", "memory_scope": "server_wide"})
    changing = create_memory(world, {"memory_content": "{user} likes OLD-TEA", **personal})
    seen = worker.ask(action="build", lineage=lineage)
    assert "DOOMED-FACT" in seen and "OLD-TEA" in seen  # the worker has both cached now

    for round_ in range(3):  # every later write is seen too, not just the first
        update_memory(
            world,
            {
                "memory_id": changing,
                "memory_content": f"{{user}} likes NEW-{round_}",
                "target_user": "Alice",
            },
        )
        seen = worker.ask(action="build", lineage=lineage)
        assert f"NEW-{round_}" in seen and "OLD-TEA" not in seen
    update_memory(world, {"memory_id": doomed, "memory_content": ""})
    added = create_memory(world, {"memory_content": "FRESH-FACT", "memory_scope": "server_wide"})

    seen = worker.ask(action="build", lineage=lineage)
    assert "DOOMED-FACT" not in seen and f"ID:{doomed} " not in seen
    assert re.search(rf"ID:{added} \([^)]*\) FRESH-FACT", seen)
    found = json.dumps(worker.ask(action="search", lineage=lineage, query="DOOMED-FACT FRESH-FACT"))
    assert "DOOMED" not in found and "FRESH-FACT" in found
    result = worker.ask(
        action="update", lineage=lineage, arguments={"memory_id": doomed, "memory_content": "x"}
    )
    assert result["status"] == "memory_update_failed_not_found"
    # ...and the other way round: the worker's write is seen here.
    result = worker.ask(
        action="update",
        lineage=lineage,
        arguments={"memory_id": added, "memory_content": "FRESH-FACT-EDITED-ELSEWHERE"},
    )
    assert result["status"] == "memory_updated_successfully"
    window = store.memory_window(
        __import__("kioku._memory.repository", fromlist=["x"]).ServerScope("srv-a", lineage)
    )
    assert [m.content for m in window.records] == ["FRESH-FACT-EDITED-ELSEWHERE"]


def test_caches_are_bounded() -> None:
    cache: ScopeCache[int, str] = ScopeCache(max_entries=100)
    for key in range(1000):
        cache.put(key, 1, "v")
    assert len(cache) == 100
    assert cache.get(999, 1) == "v" and cache.get(0, 1) is None
    assert cache.get(999, 2) is None  # another version: stale


def test_an_erasure_in_one_process_is_seen_by_another(store: KiokuStore, worker: Worker) -> None:
    world: World = make_world(store)
    lineage = world.persona.lineage_id
    create_memory(
        world,
        {
            "memory_content": "{user} likes ALICE-TEA",
            "memory_scope": "target_user",
            "target_user": "Alice",
        },
    )
    assert "ALICE-TEA" in worker.ask(action="build", lineage=lineage)  # cached there now
    store.erase_user("u-alice")
    assert "ALICE-TEA" not in worker.ask(action="build", lineage=lineage)
    found = worker.ask(action="search", lineage=lineage, query="ALICE-TEA tea")
    assert "ALICE-TEA" not in json.dumps(found)
