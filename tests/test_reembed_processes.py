"""``kioku reembed`` in one process while a worker process writes in a loop (issue #39,
item 5): to a model of the same size and to one of another size. The worker answers with
its usual statuses throughout; afterwards every memory holds a vector the new model made
of its text, or is queued, and a second run embeds what is queued."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import text

from kioku._db.vectors import halfvec_text
from kioku._reembed import reembed
from tests.helpers import make_world, process_env
from tests.reembed_worker import OLD, READY_AFTER, TURNS_AFTER
from tests.test_reembed import open_store, spec
from tests.test_reembed_races import assert_current

SEEDED = 300
"""Memories the re-embed works through while the worker writes (on another server)."""


@pytest.mark.parametrize("dimension", [32, 48], ids=["same size", "another size"])
def test_reembed_while_a_worker_process_writes(
    fresh_database: str, tmp_path: Path, dimension: int
) -> None:
    store = open_store(fresh_database, OLD)
    store.setup()
    world = make_world(store)
    seeds = [f"seed fact number {i}" for i in range(SEEDED)]
    vectors = OLD.embeddings.embed_documents(seeds)
    with store.engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO memories (scope, server_id, persona_lineage_id, content, "
                "embedding, embedded_with) VALUES ('server', 'srv-b', :lineage, :content, "
                "CAST(:vector AS halfvec), :model)"
            ),
            [
                {
                    "lineage": world.other_persona.lineage_id,
                    "content": content,
                    "vector": halfvec_text(vector),
                    "model": OLD.model,
                }
                for content, vector in zip(seeds, vectors, strict=True)
            ],
        )
    stop = tmp_path / "stop"
    persona = world.persona
    worker = subprocess.Popen(
        [sys.executable, "-m", "tests.reembed_worker", fresh_database]
        + [str(persona.persona_id), str(persona.lineage_id), str(stop)],
        stdout=subprocess.PIPE,
        text=True,
        env=process_env(fresh_database, MAX_SERVER_MEMORIES="100000"),
    )
    try:
        assert worker.stdout is not None
        assert worker.stdout.readline().strip() == "ready"
        reembedded = subprocess.run(
            [sys.executable, "-m", "kioku.cli", "reembed"],
            env=process_env(fresh_database, KIOKU_EMBEDDING_DIMENSION=str(dimension)),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert reembedded.returncode == 0, reembedded.stderr
        assert f"with hashing-{dimension}" in reembedded.stdout
        stop.touch()  # the worker writes some more, after the re-embed returned
        summary = json.loads(worker.stdout.readline())
        assert worker.wait(timeout=120) == 0
    finally:
        if worker.poll() is None:
            worker.kill()
    statuses = summary["statuses"]
    assert summary["turns"] > READY_AFTER + TURNS_AFTER
    assert not [status for status in statuses if "error" in status], statuses
    assert statuses["create_long_term_memory: memory_saved_successfully"] > TURNS_AFTER
    new = spec(dimension)
    assert_current(store.engine, new)
    with store.engine.connect() as connection:
        waiting = connection.scalar(text("SELECT count(*) FROM memories WHERE needs_embedding"))
    assert waiting >= TURNS_AFTER  # the worker's writes after the switch, queued
    reopened = open_store(fresh_database, new)
    again = reembed(reopened)
    assert (again.embedded, again.stale) == (waiting, 0)
    assert_current(store.engine, new)
    reopened.close()
    store.close()
