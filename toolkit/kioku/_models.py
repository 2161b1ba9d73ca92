"""Chat models from the environment."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage

from kioku._errors import ConfigurationError, ModelCallError, one_line
from kioku._openai_env import env_value, openai_base_url, openai_key_set, openai_model


def openai_model_from_env() -> BaseChatModel | None:
    """``ChatOpenAI`` when ``OPENAI_API_KEY`` is set, else ``None``.

    ``OPENAI_BASE_URL`` points it at any OpenAI-compatible server; ``KIOKU_OPENAI_MODEL``
    names the model (default ``gpt-4o-mini``).
    """
    if not openai_key_set():
        return None
    from langchain_openai import ChatOpenAI

    try:
        return ChatOpenAI(
            model=openai_model(),
            base_url=openai_base_url(),
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
    where = env_value("OPENAI_BASE_URL") or "api.openai.com"
    return ConfigurationError(
        f"the model endpoint {where} cannot be used: {one_line(exc)} (check OPENAI_BASE_URL, "
        "OPENAI_API_KEY and KIOKU_OPENAI_MODEL)"
    )


def ask_model(model: BaseChatModel, messages: Sequence[BaseMessage]) -> str:
    """The text of ``model``'s reply to ``messages``.

    Raises:
        ModelCallError: the call failed, or the endpoint answered with something that is not
            a reply (an HTML page at a wrong ``OPENAI_BASE_URL``); one line says which.
    """
    try:
        return model.invoke(list(messages)).text
    except Exception as exc:
        failure = endpoint_failure(exc)
        if failure is not None:
            raise ModelCallError(str(failure)) from exc
        raise ModelCallError(
            f"the chat model failed: {one_line(exc)} (for the model kioku builds from the "
            "environment, check OPENAI_BASE_URL, OPENAI_API_KEY and KIOKU_OPENAI_MODEL)"
        ) from exc
