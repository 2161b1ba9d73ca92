"""The benchmarks' texts and their vectors: MSC persona sentences, or generated ones.

Vectors are computed before any timing and looked up (:class:`Lookup`), so embedding cost
stays out of every figure. The retrieval benches' ``--embedder`` choices are named here too
(:func:`embedder_named`).
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence

from langchain_core.embeddings import Embeddings

from bench.common import bench_data
from kioku._embeddings import E5_MODEL, LOCAL_MODEL, EmbedderSpec, HashingEmbeddings

PERSONAS = "msc_personas_all.json"
"""The MSC persona file (under ``KIOKU_BENCH_DATA``) the sentences come from."""

DIM = 384
"""Dimension of the benchmarks' hashing vectors."""


class Lookup(Embeddings):
    """Precomputed vectors: keeps embedding cost out of write and search timings.

    A text without a vector is embedded through ``fallback`` once and kept.
    """

    def __init__(self, vectors: dict[str, list[float]], fallback: Embeddings) -> None:
        self.vectors, self.fallback = vectors, fallback

    @classmethod
    def of(cls, texts: Sequence[str], fallback: Embeddings) -> Lookup:
        """``texts``' vectors, computed now through ``fallback``."""
        return cls(dict(zip(texts, fallback.embed_documents(list(texts)), strict=True)), fallback)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Look the vectors up."""
        missing = [t for t in dict.fromkeys(texts) if t not in self.vectors]
        if missing:
            self.vectors.update(zip(missing, self.fallback.embed_documents(missing), strict=True))
        return [self.vectors[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        """Look one vector up."""
        return self.embed_documents([text])[0]


def sentences(count: int) -> list[str]:
    """``count`` persona sentences (numbered once the data runs out, so all differ).

    Without the MSC data (``KIOKU_BENCH_DATA``), generated sentences stand in for them.
    """
    path = bench_data(PERSONAS)
    if path is None:
        return [synthetic_sentence(i) for i in range(count)]
    data = json.loads(path.read_text())
    pool = [
        s
        for split in data.values()
        for pair in split
        for side in pair.values()
        if isinstance(side, list)
        for s in side
    ]
    unique = list(dict.fromkeys(pool))
    return [unique[i % len(unique)] + ("" if i < len(unique) else f" ({i})") for i in range(count)]


def data_source() -> str:
    """Which sentences the benchmarks use."""
    path = bench_data(PERSONAS)
    return f"MSC persona sentences ({path})" if path else "generated persona-like sentences"


_SUBJECTS = ("tea", "hiking", "jazz", "gardening", "chess", "cooking", "cycling", "poetry")
_VERBS = ("loves", "avoids", "teaches", "collects books about", "dreams of", "writes about")


def synthetic_sentence(i: int) -> str:
    """A persona-like sentence, different for every ``i``."""
    rng = random.Random(i)
    return (
        f"Person {i % 997} {rng.choice(_VERBS)} {rng.choice(_SUBJECTS)} "
        f"and {rng.choice(_SUBJECTS)} since {1950 + i % 70} ({i})"
    )


def embedder_named(kind: str) -> EmbedderSpec:
    """The embedder ``--embedder`` names (``local``, ``hashing`` or ``multilingual``)."""
    if kind == "hashing":
        return EmbedderSpec(HashingEmbeddings(384), "hashing-384", 384)
    if kind == "multilingual":
        from kioku._local_embeddings import E5Embeddings

        return EmbedderSpec(E5Embeddings(), f"multilingual:{E5_MODEL}", 384)
    from kioku._local_embeddings import MiniLMEmbeddings

    return EmbedderSpec(MiniLMEmbeddings(), f"local:{LOCAL_MODEL}", 384)
