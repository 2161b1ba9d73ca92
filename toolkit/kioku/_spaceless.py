"""Words of scripts written without spaces, as character pairs (pure).

Japanese, Chinese, Korean (whose words carry their particles), Thai, Lao, Khmer and
Myanmar put no space between words, so splitting at spaces makes a whole sentence one
"word" and nothing shared with it is ever found. Like search engines indexing CJK text,
kioku reads each run of these scripts as its characters and character pairs: a query
and a memory that share a word share its pairs. The database indexes memories the same
way (``kioku/_db/sql/kioku_search_text.sql``, which holds the same :data:`RUN_CLASS`; a
test keeps them equal).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

RUN_CLASS = (
    r"[\u0e00-\u0eff\u1000-\u109f\u1100-\u11ff\u1780-\u17ff\u3040-\u30ff"
    r"\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+"
)
"""Thai and Lao, Myanmar, Hangul Jamo, Khmer, kana, Hangul compatibility Jamo, CJK
ideographs (and extension A), Hangul syllables, CJK compatibility ideographs."""

_RUN = re.compile(RUN_CLASS)
_IDEOGRAPH = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def split_runs(word: str) -> list[str]:
    """``word`` cut where it enters or leaves a spaceless script (``"aliceは"`` → two)."""
    parts: list[str] = []
    at = 0
    for run in _RUN.finditer(word):
        parts += [word[at : run.start()], run.group()]
        at = run.end()
    parts.append(word[at:])
    return [part for part in parts if part]


def is_run(part: str) -> bool:
    """Whether ``part`` (from :func:`split_runs`) is written in a spaceless script."""
    return _RUN.fullmatch(part) is not None


def ideographs(run: str) -> list[str]:
    """A run's CJK ideographs: characters that are words on their own (猫, 車)."""
    return _IDEOGRAPH.findall(run)


def pairs(run: str) -> list[str]:
    """A run's character pairs (a lone character stands for itself)."""
    if len(run) < 2:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def terms(text: str, words: Callable[[str], list[str]]) -> list[str]:
    """``text``'s terms: ``words`` of its spaced parts, each run's character pairs.

    ``text`` is NFKC-normalised first (half-width kana read as full-width), as the
    database normalises what it indexes.
    """
    found: list[str] = []
    for part in split_runs(unicodedata.normalize("NFKC", text)):
        found += pairs(part) if is_run(part) else words(part)
    return found
