"""Exceptions raised to developers (never to the model)."""

from __future__ import annotations


class ConfigurationError(Exception):
    """A developer mistake in kioku's configuration; the message says how to fix it."""


class DatabaseUnavailableError(ConfigurationError):
    """The configured database cannot be used (unreachable, or pgvector missing)."""


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
