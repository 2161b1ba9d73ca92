"""OpenAI settings read from the environment: no client, no LangChain.

Both the embedder (:mod:`kioku._embeddings`) and the chat model (:mod:`kioku._models`)
read them; commands that need neither import only this.
"""

from __future__ import annotations

import os

DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"


def env_value(name: str) -> str | None:
    """The variable ``name``, ``None`` when unset or blank (as for kioku's own settings)."""
    value = os.environ.get(name, "").strip()
    return value or None


def openai_key_set() -> bool:
    """Whether ``OPENAI_API_KEY`` holds a key (blank is none)."""
    return env_value("OPENAI_API_KEY") is not None


def openai_base_url() -> str:
    """``OPENAI_BASE_URL``, or OpenAI's own address.

    Passed to the clients explicitly: they would take a blank variable as the address.
    """
    return env_value("OPENAI_BASE_URL") or OPENAI_DEFAULT_BASE_URL


def openai_model() -> str:
    """``KIOKU_OPENAI_MODEL``, else :data:`DEFAULT_OPENAI_MODEL`."""
    return env_value("KIOKU_OPENAI_MODEL") or DEFAULT_OPENAI_MODEL
