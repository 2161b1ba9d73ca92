"""Pure text rules for memory content and names (SPEC §3 step 5, §6)."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache

TEMPLATE_TOKENS = frozenset({"user", "bot", "char"})
"""Placeholders kept as they are; other ``{word}`` placeholders lose their braces."""

_PLACEHOLDER = re.compile(r"\{\{\s*(\w+)\s*\}\}|\{\s*(\w+)\s*\}")
_SURROGATES = "\ud800-\udfff"
"""UTF-16 halves: a Python string may hold them, UTF-8 (and so PostgreSQL) cannot."""
_CONTROL = re.compile(f"[\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f\\x7f{_SURROGATES}]")
"""Dropped from content: control characters (NUL included) and surrogates."""
_UNSTORABLE = re.compile(f"[\\x00{_SURROGATES}]")
"""What PostgreSQL text and JSON cannot hold: NUL and surrogates."""
ECHO_LIMIT = 100
"""The most characters of a model-supplied value a reason repeats."""


def sanitise_content(content: str) -> str:
    """Trim, drop control characters and unwrap unknown ``{word}``/``{{word}}`` placeholders.

    Surrogates go with the control characters, so the result is always storable.

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


def unstorable(text: str) -> str | None:
    """What in ``text`` PostgreSQL cannot store (``"a NUL character"``, …), or ``None``."""
    found = _UNSTORABLE.search(text)
    if found is None:
        return None
    return "a NUL character" if found.group() == "\x00" else "a lone surrogate (invalid Unicode)"


def echo(value: str, limit: int = ECHO_LIMIT) -> str:
    """``value`` fit to repeat in a reason: at most ``limit`` characters, always storable.

    A longer value is cut, ends in ``…`` and says its length; NUL and surrogates become
    U+FFFD, so the reason itself can always be encoded.
    """
    shown = _UNSTORABLE.sub("\ufffd", value[:limit])
    if len(value) <= limit:
        return shown
    return f"{shown}… (cut; {len(value)} characters)"


def normalise_name(name: str) -> str:
    """Normalise a person's name for matching: the one definition of the name key.

    NFKC, one leading ``@`` dropped, whitespace collapsed, case-folded (full case
    folding: ``Straße`` and ``STRASSE`` match), NFKC again (folding can denormalise).
    Stored beside every name in the directory tables, so SQL compares the same keys.
    """
    text = unicodedata.normalize("NFKC", name).strip()
    if text.startswith("@"):
        text = text[1:]
    return unicodedata.normalize("NFKC", " ".join(text.split()).casefold())


def name_key(name: str | None) -> str | None:
    """:func:`normalise_name` of an optional name (``None`` stays ``None``)."""
    return normalise_name(name) if name is not None else None


def with_bridge_name(content: str, name: str) -> str:
    """Sanitised ``content`` with its ``{user}`` tokens (any case) replaced by ``name``.

    A bridged user has no personal memories, so a memory about them is saved server-wide
    and must say who it is about. Braces are dropped from the name so it cannot add tokens.
    """
    plain = name.replace("{", "").replace("}", "")
    return sanitise_content(content).replace("{user}", plain)


_BREAKS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\s]+")
_I_LIKE = "IiІіΙιӀӏɪÍÌÎÏĪĬĮİíìîïīĭįıǏǐȈȉȊȋ"
_D_LIKE = "DdĎďĐđԁᎠᗞɗÐ"
_ENTRY_ID = re.compile(rf"(?<!\w)[{_I_LIKE}]\s*[{_D_LIKE}]\s*[^\w\s]{{1,3}}\s*(?=\d)")
"""``ID:7`` and look-alikes (``ID˸7``, ``id - 7``, ``I D:7``, Cyrillic or accented ``І``),
after NFKC folded full-width forms: any punctuation between ``ID`` and a number."""
_LOOK_ALIKES = str.maketrans(
    {
        **dict.fromkeys("【〔〖〘⟦⦗〚", "("),
        **dict.fromkeys("】〕〗〙⟧⦘〛", ")"),
        **dict.fromkeys("“”„‟″〝〞〟«»", "'"),
    }
)
"""Brackets and quotes NFKC leaves alone, folded like their ASCII forms."""
APOSTROPHES = str.maketrans(dict.fromkeys("\u2018\u2019\u201b\u02bc\u2032`", "'"))
"""Typographic apostrophes (as phones and models write "can’t") and backticks, to ``'``:
for the rules that read words (intent phrases, sameness)."""
_HEADER = re.compile(r"#{2,}")
_FENCE = re.compile(r"`{3,}|~{3,}")
_LEADING_MARKS = re.compile(r"^[\s#>*+\-=|]+")
"""Markdown block markers a rendered line might start with (a header, a list item)."""


_FORMAT_CHARACTERS = re.compile(
    "[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f"
    "\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U00013438\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001"
    "\U000e0020-\U000e007f]"
)
"""Invisible format characters (Unicode category Cf: zero-width joiners, bidi controls)."""


@lru_cache(maxsize=16384)
def as_data(text: str) -> str:
    """Stored text made safe to render inside kioku's context blocks.

    Memory content, summaries, captured chat and names are data, never structure. The
    text is folded with NFKC (full-width look-alikes become plain), loses invisible format
    characters and leading markdown markers (``#``, ``-``, ``>``), and becomes one line
    (every line or paragraph separator and control character turns into a space). It
    cannot open a ``[System: …]`` item (brackets become parentheses), close a quote
    (double quotes become single ones), forge an ``ID:N`` entry (``ID 7``), a markdown
    header or a code fence.
    """
    if not text.isascii():  # ASCII has nothing to fold (cached: memories repeat every turn)
        text = _FORMAT_CHARACTERS.sub("", unicodedata.normalize("NFKC", text))
        text = text.translate(_LOOK_ALIKES)
    text = _BREAKS.sub(" ", text).strip()
    text = text.replace("[", "(").replace("]", ")").replace('"', "'")
    text = _ENTRY_ID.sub("ID ", text)
    text = _HEADER.sub("#", text)
    text = _FENCE.sub(lambda m: m.group(0)[0], text)
    return _LEADING_MARKS.sub("", text)


SHOWS_AS_NOTHING = (
    "would show as nothing (only invisible characters or markdown markers); write the fact in words"
)
"""Why a text whose :func:`as_data` form is empty is refused."""


class ContentFault(Enum):
    """The rule of :func:`check_content` a text breaks."""

    EMPTY = "empty"
    """Nothing is left once sanitised (it was blank, or only unstorable characters)."""
    SHOWS_AS_NOTHING = "shows as nothing"
    """Its :func:`as_data` form is empty (:data:`SHOWS_AS_NOTHING`)."""
    TOO_LONG = "too long"
    """Longer than the limit once sanitised."""


@dataclass(frozen=True)
class CheckedContent:
    """A text as a memory's content would hold it, and the rule it breaks (if any)."""

    text: str
    """The text sanitised (:func:`sanitise_content`)."""
    fault: ContentFault | None
    """``None``: it may be a memory's content."""

    def too_long(self, field: str, max_length: int) -> str:
        """Why a :attr:`ContentFault.TOO_LONG` text is refused, naming ``field``."""
        return f"{field} is {len(self.text)} characters; the maximum is {max_length}"


def check_content(raw: str, max_length: int) -> CheckedContent:
    """``raw`` as a memory's content: the one rule every write path applies (SPEC §3 step 5).

    Sanitised, it must keep some text, show as something once rendered as data, and be at
    most ``max_length`` characters (``MAX_MEMORY_LENGTH``); the first rule it breaks is
    its fault. Each path words the refusal its own way (a tool's status, a store's error).
    """
    text = sanitise_content(raw)
    if not text:
        return CheckedContent(text, ContentFault.EMPTY)
    if not as_data(text):
        return CheckedContent(text, ContentFault.SHOWS_AS_NOTHING)
    if len(text) > max_length:
        return CheckedContent(text, ContentFault.TOO_LONG)
    return CheckedContent(text, None)


def quoted_data(text: str) -> str:
    """``as_data(text)`` in double quotes it cannot close (its own quotes become ``'``)."""
    return '"' + as_data(text) + '"'


def render_tokens(content: str, *, user_name: str, bot_name: str) -> str:
    """Replace ``{user}`` and ``{bot}``/``{char}`` tokens with names."""
    return (
        content.replace("{user}", user_name).replace("{bot}", bot_name).replace("{char}", bot_name)
    )
