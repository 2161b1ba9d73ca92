"""Chat models from the environment."""

from __future__ import annotations

import os

from langchain_core.language_models import BaseChatModel

DEFAULT_OPENAI_MODEL = "gpt-4o-mini"


def openai_model_from_env() -> BaseChatModel | None:
    """``ChatOpenAI`` when ``OPENAI_API_KEY`` is set, else ``None``.

    ``OPENAI_BASE_URL`` points it at any OpenAI-compatible server; ``KIOKU_OPENAI_MODEL``
    names the model (default ``gpt-4o-mini``).
    """
    if not os.environ.get("OPENAI_API_KEY"):
        return None
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model=os.environ.get("KIOKU_OPENAI_MODEL", DEFAULT_OPENAI_MODEL),
        base_url=os.environ.get("OPENAI_BASE_URL") or None,
    )
