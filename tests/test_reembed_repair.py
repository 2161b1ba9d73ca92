"""``kioku reembed`` finds and re-embeds every vector not recorded as the configured
model's (issue #39, item 5): a second run repairs what the first left."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from kioku import KiokuStore
from kioku._db.vectors import halfvec_text
from kioku._reembed import reembed
from tests.helpers import make_world
from tests.reembed_worker import OLD
from tests.test_reembed import open_store, spec
from tests.test_reembed_races import SAVED, assert_current, old, save

__all__ = ["old"]  # the fixture

OLD_RELEASE_CREATE = text(
    "SELECT * FROM kioku_create_memory_within_limit('srv-a', 'Server A', 'server', 'srv-a', "
    "NULL, NULL, :lineage, 'a lock', 100, NULL, NULL, 'earlier release create', "
    "CAST(:vector AS halfvec), 'semantic', 0.5, 0.01, '{}'::jsonb, false)"
)
"""A create as a process of the previous release sends it (18 arguments, no model)."""
OLD_RELEASE_UPDATE = text(
    "SELECT kioku_update_memory(id, 'earlier release update', embedding, NULL, NULL, NULL) "
    "FROM memories WHERE content = 'to update'"
)


def test_reembed_finds_and_repairs_vectors_not_of_its_model(old: KiokuStore) -> None:
    world = make_world(old)
    for content in ("labelled otherwise", "to update", "sound fact"):
        assert save(world, content)["status"] == SAVED
    [vector] = OLD.embeddings.embed_documents(["earlier release create"])
    with old.engine.begin() as connection:
        connection.execute(
            text("UPDATE memories SET embedded_with = 'gone' WHERE content = :c"),
            {"c": "labelled otherwise"},
        )
        connection.execute(
            OLD_RELEASE_CREATE,
            {"lineage": world.persona.lineage_id, "vector": halfvec_text(vector)},
        )
        connection.execute(OLD_RELEASE_UPDATE)
        rows = connection.execute(text("SELECT content, embedded_with FROM memories"))
        labels = {content: model for content, model in rows}
    assert labels == {
        "labelled otherwise": "gone",
        "earlier release create": None,  # kept, unlabelled
        "earlier release update": None,
        "sound fact": OLD.model,
    }
    done = reembed(old)
    assert (done.embedded, done.stale) == (3, 3)
    assert_current(old.engine, OLD)
    assert reembed(old) == (0, 0)


def test_reembed_all_embeds_every_memory_again(old: KiokuStore) -> None:
    world = make_world(old)
    for content in ("first fact", "second fact"):
        assert save(world, content)["status"] == SAVED
    assert reembed(old, everything=True) == (2, 0)
    assert_current(old.engine, OLD)


def test_kioku_reembed_reports_what_it_found(
    fresh_database: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from kioku.cli import main

    store = open_store(fresh_database, spec(32))
    store.setup()
    assert save(make_world(store), "a fact")["status"] == SAVED
    with store.engine.begin() as connection:
        connection.execute(text("UPDATE memories SET embedded_with = NULL"))
    store.close()
    monkeypatch.setenv("KIOKU_DATABASE_URL", fresh_database)
    monkeypatch.setenv("KIOKU_EMBEDDING_DIMENSION", "32")
    assert main(["reembed"]) == 0
    out = capsys.readouterr().out
    assert "Embedded 1 memories with hashing-32." in out
    assert "1 of them had a vector not recorded as hashing-32's" in out
    assert main(["reembed"]) == 0
    assert "Embedded 0 memories" in capsys.readouterr().out
    assert main(["reembed", "--all"]) == 0
    out = capsys.readouterr().out
    assert "Embedded 1 memories with hashing-32." in out and "not recorded" not in out
