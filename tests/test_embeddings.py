"""Every write computes the embedding; failures queue the memory; the embedder is pinned."""

from __future__ import annotations

import random
import struct
import threading
from decimal import Decimal

import pytest
from langchain_core.embeddings import Embeddings
from sqlalchemy import Engine, text

from kioku import (
    ConfigurationError,
    KiokuSettings,
    KiokuStore,
    create_long_term_memory_tool,
    update_long_term_memory_tool,
)
from kioku._db.vectors import ensure_vector_schema, halfvec_text, stored_embedder
from kioku._embeddings import EmbedderSpec, HashingEmbeddings, embedder_from_settings
from tests.helpers import make_world, memory_row, run_tool


class BrokenEmbeddings(Embeddings):
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        raise TimeoutError("embedding service timed out")

    def embed_query(self, text: str) -> list[float]:
        raise TimeoutError("embedding service timed out")


class OverflowingEmbeddings(Embeddings):
    """Returns values no half-precision vector can hold."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[1e6] + [0.0] * 383 for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        return [1e6] + [0.0] * 383


class ScalarEmbeddings(Embeddings):
    """Returns values of a number type of its own, as clients returning numpy's float32 do.

    ``Decimal`` stands for such a type: ``float``'s comparisons do not take it directly.
    """

    def __init__(self, first: str) -> None:
        self.first = Decimal(first)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return [self.first] + [Decimal("0.5")] * 383  # type: ignore[list-item]


HALF_PRECISION = 1e-3
"""Vectors are stored as halfvec."""


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_hashing_embeddings_are_deterministic_and_similar_for_similar_text() -> None:
    e = HashingEmbeddings(384)
    a, b, c = e.embed_documents(
        ["Alice likes jasmine tea", "alice loves jasmine tea", "quantum chromodynamics"]
    )
    assert a == HashingEmbeddings(384).embed_query("Alice likes jasmine tea")
    assert len(a) == 384 and abs(cosine(a, a) - 1) < 1e-9
    assert cosine(a, b) > 0.5 > cosine(a, c)


def test_writes_store_embeddings(store: KiokuStore) -> None:
    world = make_world(store)
    created = run_tool(
        create_long_term_memory_tool(store),
        {"memory_content": "{user} likes tea", "memory_scope": "server_wide"},
        world.context(),
    ).result
    row = memory_row(store, created["memory_id"])
    assert row is not None and row.embedding is not None and not row.needs_embedding
    assert list(row.embedding) == pytest.approx(
        store.embedder.embeddings.embed_query("{user} likes tea"), abs=HALF_PRECISION
    )
    run_tool(
        update_long_term_memory_tool(store),
        {"memory_id": created["memory_id"], "memory_content": "{user} likes coffee"},
        world.context(),
    )
    row = memory_row(store, created["memory_id"])
    assert row is not None
    assert list(row.embedding) == pytest.approx(
        store.embedder.embeddings.embed_query("{user} likes coffee"), abs=HALF_PRECISION
    )


def test_values_of_another_number_type_are_saved_as_floats(store: KiokuStore) -> None:
    scalar_store = KiokuStore(
        store.engine,
        settings=store.settings,
        embedder=EmbedderSpec(ScalarEmbeddings("0.25"), "hashing-384", 384),
    )
    created = run_tool(
        create_long_term_memory_tool(scalar_store),
        {"memory_content": "{user} likes decimal tea", "memory_scope": "server_wide"},
        make_world(scalar_store).context(),
    ).result
    row = memory_row(store, created["memory_id"])
    assert row is not None and not row.needs_embedding
    assert list(row.embedding)[:2] == pytest.approx([0.25, 0.5], abs=HALF_PRECISION)


@pytest.mark.parametrize(
    "embeddings",
    [
        BrokenEmbeddings(),
        OverflowingEmbeddings(),
        ScalarEmbeddings("1e6"),
        ScalarEmbeddings("NaN"),
    ],
)
def test_embedding_failure_saves_and_queues(
    store: KiokuStore, caplog: pytest.LogCaptureFixture, embeddings: Embeddings
) -> None:
    broken = KiokuStore(
        store.engine,
        settings=store.settings,
        embedder=EmbedderSpec(embeddings, "hashing-384", 384),
    )
    world = make_world(broken)
    result = run_tool(
        create_long_term_memory_tool(broken),
        {"memory_content": "{user} likes tea", "memory_scope": "server_wide"},
        world.context(),
    ).result
    assert result["status"] == "memory_saved_successfully"
    row = memory_row(store, result["memory_id"])
    assert row is not None and row.embedding is None and row.needs_embedding
    assert "queued for re-embedding" in caplog.text
    # Still found by full-text search.
    with store.sessions() as session:
        hits = (
            session.execute(
                text(
                    "SELECT id FROM memories "
                    "WHERE search_vector @@ plainto_tsquery('kioku_text', 'likes tea')"
                )
            )
            .scalars()
            .all()
        )
    assert hits == [result["memory_id"]]


def test_switching_embedders_is_refused_with_a_fix(engine: Engine) -> None:
    with engine.begin() as connection:
        assert stored_embedder(connection) == ("hashing-384", 384)
        with pytest.raises(ConfigurationError, match="kioku reembed"):
            ensure_vector_schema(connection, "openai:text-embedding-3-small", 1536)


def test_unknown_embedder_name() -> None:
    with pytest.raises(ConfigurationError, match="KIOKU_EMBEDDINGS"):
        embedder_from_settings(KiokuSettings(embeddings="word2vec"))


def test_short_halfvec_text_stores_the_same_halves(engine: Engine) -> None:
    """Five significant digits name each half exactly: the server keeps those halves."""
    rng = random.Random(7)
    vectors = [[rng.uniform(-1, 1) * 10 ** rng.randint(-6, 1) for _ in range(64)]]
    vectors += [[rng.gauss(0, 0.05) for _ in range(384)] for _ in range(20)]
    with engine.connect() as connection:
        for vector in vectors:
            layout = f"{len(vector)}e"
            halves = struct.unpack(layout, struct.pack(layout, *vector))
            full = "[" + ",".join(map(repr, halves)) + "]"
            same = connection.execute(
                text("SELECT CAST(:short AS halfvec) = CAST(:full AS halfvec)"),
                {"short": halfvec_text(vector), "full": full},
            ).scalar_one()
            assert same, vector


def test_auto_picks_openai_then_multilingual_then_local_then_hashing_with_one_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from kioku import _embeddings

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert _embeddings.auto_choice() == "openai"
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setattr(_embeddings, "multilingual_embedder_installed", lambda: True)
    monkeypatch.setattr(_embeddings, "local_embedder_installed", lambda: True)
    assert _embeddings.auto_choice() == "multilingual"
    monkeypatch.setattr(_embeddings, "multilingual_embedder_installed", lambda: False)
    assert _embeddings.auto_choice() == "local"
    monkeypatch.setattr(_embeddings, "local_embedder_installed", lambda: False)
    monkeypatch.setattr(_embeddings, "_warned", threading.Event())
    with caplog.at_level("WARNING", logger="kioku"):
        spec = embedder_from_settings(KiokuSettings(embeddings="auto"))
        embedder_from_settings(KiokuSettings(embeddings="auto"))
    assert spec.model == "hashing-384"
    warnings = [r for r in caplog.records if "search is lexical" in r.getMessage()]
    assert len(warnings) == 1


def test_auto_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KIOKU_EMBEDDINGS")
    assert KiokuSettings().embeddings == "auto"


def test_blank_values_count_as_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    from kioku import _embeddings, load_settings

    monkeypatch.setenv("OPENAI_API_KEY", "  ")
    monkeypatch.setattr(_embeddings, "multilingual_embedder_installed", lambda: False)
    monkeypatch.setattr(_embeddings, "local_embedder_installed", lambda: True)
    assert _embeddings.auto_choice() == "local"
    monkeypatch.setenv("KIOKU_EMBEDDINGS", "")
    assert load_settings().embeddings == "auto"
    from kioku._openai_env import DEFAULT_OPENAI_MODEL, openai_base_url, openai_model

    monkeypatch.setenv("OPENAI_BASE_URL", "")
    monkeypatch.setenv("KIOKU_OPENAI_MODEL", " ")
    assert openai_base_url() == "https://api.openai.com/v1"
    assert openai_model() == DEFAULT_OPENAI_MODEL
