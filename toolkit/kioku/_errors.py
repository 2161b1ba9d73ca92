"""Exceptions raised to developers (never to the model)."""

from __future__ import annotations


class ConfigurationError(Exception):
    """A developer mistake in kioku's configuration; the message says how to fix it."""


class DatabaseUnavailableError(ConfigurationError):
    """The configured database cannot be used (unreachable, or pgvector missing)."""


class EmbedderMismatchError(ConfigurationError):
    """The stored vectors come from another embedder than the configured one.

    Args:
        stored: the model and dimension the database records.
        configured: the model and dimension of the configured embedder.
        remedy: the command that re-embeds them.
    """

    def __init__(
        self,
        stored: tuple[str, int],
        configured: tuple[str, int],
        remedy: str = "`kioku reembed` to re-embed every memory with the new model",
    ) -> None:
        super().__init__(
            f"The memories were embedded with {stored[0]} ({stored[1]} dimensions), but the "
            f"configured embedder is {configured[0]} ({configured[1]}). Run {remedy}, or set "
            "KIOKU_EMBEDDINGS back."
        )
        self.stored = stored
        self.configured = configured


class ItemRefusedError(ConfigurationError, ValueError):
    """A LangGraph store item kioku refuses as given; nothing was written.

    Its address, value or text cannot be kept as given, or its owner's privacy allows no
    personal memories: the message says which, on one line.
    """


class ModelCallError(ConfigurationError):
    """A chat model kioku asked (consolidation) failed or answered with something unreadable.

    The model's own exception is chained as ``__cause__``.
    """


def one_line(exc: BaseException) -> str:
    """An exception's message on one line (the first line that says something)."""
    for line in str(exc).splitlines():
        if line.strip():
            return line.strip()
    return type(exc).__name__
