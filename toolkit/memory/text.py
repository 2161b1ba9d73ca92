"""Pure text rules for memory content and names (SPEC §3 step 5, §6)."""

from __future__ import annotations

import re
import unicodedata

TEMPLATE_TOKENS = frozenset({"user", "bot", "char"})
"""Placeholders kept as they are; other ``{word}`` placeholders lose their braces."""

_PLACEHOLDER = re.compile(r"\{\{\s*(\w+)\s*\}\}|\{\s*(\w+)\s*\}")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def sanitise_content(content: str) -> str:
    """Trim, drop control characters and unwrap unknown ``{word}``/``{{word}}`` placeholders.

    ``{user}``, ``{bot}`` and ``{char}`` (any case) are normalised to single braces
    and kept; every other placeholder keeps only its word.
    """

    def _replace(match: re.Match[str]) -> str:
        word = match.group(1) or match.group(2)
        if word.lower() in TEMPLATE_TOKENS:
            return "{" + word.lower() + "}"
        return word

    cleaned = _CONTROL.sub("", content)
    return _PLACEHOLDER.sub(_replace, cleaned).strip()


def normalise_name(name: str) -> str:
    """Normalise a person's name for matching.

    NFKC, one leading ``@`` dropped, whitespace collapsed, case-folded.
    """
    text = unicodedata.normalize("NFKC", name).strip()
    if text.startswith("@"):
        text = text[1:]
    return " ".join(text.split()).casefold()


def render_tokens(content: str, *, user_name: str, bot_name: str) -> str:
    """Replace ``{user}`` and ``{bot}``/``{char}`` tokens with names."""
    return (
        content.replace("{user}", user_name).replace("{bot}", bot_name).replace("{char}", bot_name)
    )
