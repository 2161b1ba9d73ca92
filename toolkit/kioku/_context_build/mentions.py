"""Mention conversion: ``{user}``, ``{bot}`` and platform mentions become names."""

from __future__ import annotations

import re
from collections.abc import Mapping

_PLATFORM_MENTION = re.compile(r"<@!?([^>\s]+)>")


def convert_mentions(
    text: str, *, user_name: str, bot_name: str, names_by_id: Mapping[str, str]
) -> str:
    """Render template tokens and ``<@id>`` mentions as display names.

    Unknown ids become ``someone`` so raw ids never reach the model.
    """
    if "{" in text:
        text = text.replace("{user}", user_name).replace("{bot}", bot_name)
        text = text.replace("{char}", bot_name)
    if "<@" not in text:
        return text
    return _PLATFORM_MENTION.sub(lambda m: names_by_id.get(m.group(1), "someone"), text)
