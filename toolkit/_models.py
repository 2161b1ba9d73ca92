"""Chat models from the environment."""

from __future__ import annotations

import os

from langchain_core.language_models import BaseChatModel

from kioku._errors import ConfigurationError, one_line

DEFAULT_OPENAI_MODEL = "gpt-4o-mini"


def openai_model_from_env() -> BaseChatModel | None:
    """``ChatOpenAI`` when ``OPENAI_API_KEY`` is set, else ``None``.

    ``OPENAI_BASE_URL`` points it at any OpenAI-compatible server; ``KIOKU_OPENAI_MODEL``
    names the model (default ``gpt-4o-mini``).
    """
    if not os.environ.get("OPENAI_API_KEY"):
        return None
    from langchain_openai import ChatOpenAI

    try:
        return ChatOpenAI(
            model=os.environ.get("KIOKU_OPENAI_MODEL", DEFAULT_OPENAI_MODEL),
            base_url=os.environ.get("OPENAI_BASE_URL") or None,
        )
    except Exception as exc:  # pydantic validation of the client's settings
        raise ConfigurationError(
            f"the chat model cannot be set up: {one_line(exc)} (check OPENAI_API_KEY, "
            "OPENAI_BASE_URL and KIOKU_OPENAI_MODEL)"
        ) from None


def endpoint_failure(exc: BaseException) -> ConfigurationError | None:
    """A one-line error for a model or embedder endpoint that cannot be used, else None.

    Connection failures, timeouts and refusals (wrong key, unknown model) of the OpenAI
    client are setup problems the CLI reports in one line, not tracebacks.
    """
    try:
        import openai
    except ImportError:  # pragma: no cover - langchain-openai depends on it
        return None
    if not isinstance(exc, openai.APIError):
        return None
    where = os.environ.get("OPENAI_BASE_URL") or "api.openai.com"
    return ConfigurationError(
        f"the model endpoint {where} cannot be used: {one_line(exc)} (check OPENAI_BASE_URL, "
        "OPENAI_API_KEY and KIOKU_OPENAI_MODEL)"
    )
