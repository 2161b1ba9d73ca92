"""Switching embedders is an explicit re-embed, never a silent mismatch."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from kioku import ConfigurationError, KiokuSettings, KiokuStore, create_long_term_memory_tool
from kioku._db.engine import make_engine
from kioku._db.models import Memory
from kioku._embeddings import EmbedderSpec, HashingEmbeddings
from kioku._reembed import reembed
from tests.helpers import World, make_world, run_tool
from tests.test_embeddings import BrokenEmbeddings


def spec(dim: int) -> EmbedderSpec:
    return EmbedderSpec(HashingEmbeddings(dim), f"hashing-{dim}", dim)


def open_store(url: str, embedder: EmbedderSpec) -> KiokuStore:
    return KiokuStore(make_engine(url), settings=KiokuSettings(database_url=url), embedder=embedder)


def save_facts(store: KiokuStore, count: int) -> World:
    world = make_world(store)
    create = create_long_term_memory_tool(store)
    for i in range(count):
        run_tool(
            create, {"memory_content": f"fact {i}", "memory_scope": "server_wide"}, world.context()
        )
    return world


def test_reembed_after_switching_and_for_queued_memories(
    fresh_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = open_store(fresh_database, spec(32))
    old.setup()
    world = save_facts(old, 5)
    broken = KiokuStore(
        old.engine,
        settings=old.settings,
        embedder=EmbedderSpec(BrokenEmbeddings(), "hashing-32", 32),
    )
    run_tool(
        create_long_term_memory_tool(broken),
        {"memory_content": "queued fact", "memory_scope": "server_wide"},
        world.context(),
    )

    # Same model: only the queued memory is embedded.
    assert reembed(old).embedded == 1
    old.close()

    new = open_store(fresh_database, spec(48))
    with pytest.raises(ConfigurationError, match="kioku reembed"):
        new.setup()
    seen: list[tuple[int, int]] = []
    done = reembed(new, batch_size=4, progress=lambda done, total: seen.append((done, total)))
    assert done.embedded == 6
    assert seen[-1] == (6, 6)
    new.setup()  # now consistent
    with new.sessions() as session:
        vectors = session.scalars(select(Memory.embedding)).all()
    assert len(vectors) == 6 and all(v is not None and len(v) == 48 for v in vectors)
    new.close()


def test_kioku_reembed_command(
    fresh_database: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from kioku.cli import main

    monkeypatch.setenv("KIOKU_DATABASE_URL", fresh_database)
    monkeypatch.setenv("KIOKU_EMBEDDING_DIMENSION", "40")
    assert main(["reembed"]) == 0
    assert "Embedded 0 memories with hashing-40" in capsys.readouterr().out


def test_an_embedder_that_fails_changes_nothing_and_resumes(fresh_database: str) -> None:
    old = open_store(fresh_database, spec(32))
    old.setup()
    save_facts(old, 5)
    old.close()

    # An endpoint that cannot be used: the database keeps its embedder and its vectors.
    broken = open_store(fresh_database, EmbedderSpec(BrokenEmbeddings(), "broken-48", 48))
    with pytest.raises(ConfigurationError, match="nothing was changed"):
        reembed(broken)
    broken.close()
    old = open_store(fresh_database, spec(32))
    old.setup()  # still consistent with the old embedder
    with old.sessions() as session:
        assert all(v is not None for v in session.scalars(select(Memory.embedding)))
    old.close()

    # One that fails part way: what is done stays done, the rest is queued for the next run.
    calls = {"n": 0}

    class FailsOnSecondBatch(HashingEmbeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            calls["n"] += 1
            if calls["n"] == 3:  # the trial, the first batch, then this one
                raise RuntimeError("endpoint went away")
            return super().embed_documents(texts)

    flaky = open_store(fresh_database, EmbedderSpec(FailsOnSecondBatch(48), "hashing-48", 48))
    with pytest.raises(ConfigurationError, match="after 2 of 5 memories.*run `kioku reembed`"):
        reembed(flaky, batch_size=2)
    flaky.close()
    new = open_store(fresh_database, spec(48))
    assert reembed(new, batch_size=2).embedded == 3
    new.setup()
    with new.sessions() as session:
        vectors = session.scalars(select(Memory.embedding)).all()
    assert len(vectors) == 5 and all(v is not None and len(v) == 48 for v in vectors)
    new.close()


def test_opening_with_another_embedder_is_refused_before_any_write(
    fresh_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker that skips setup() must not write vectors of another model."""
    old = open_store(fresh_database, spec(32))
    old.setup()
    old.close()
    monkeypatch.setenv("KIOKU_DATABASE_URL", fresh_database)
    with pytest.raises(ConfigurationError, match="kioku reembed"):
        KiokuStore.open(embedder=spec(48))
    with pytest.raises(ConfigurationError, match="kioku reembed"):
        KiokuStore.open(embedder=EmbedderSpec(HashingEmbeddings(32), "other-32", 32))
    KiokuStore.open(embedder=spec(32)).close()  # the recorded one opens
    KiokuStore.open(embedder=spec(48), check_embedder=False).close()  # reembed's way in
