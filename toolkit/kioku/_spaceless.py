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


QUESTION_PARTS = (
    # Chinese: what, how, why, where, which, how many, who; the question particles; the
    # copula and "can"; this/that.
    *("什么", "甚么", "什麼", "怎么", "怎麼", "怎样", "怎樣", "为什么", "為什麼", "哪", "多少"),
    *("几", "幾", "谁", "誰", "吗", "嗎", "呢", "吧", "是", "能", "会", "會", "可以", "这", "這"),
    "那",
    # Japanese: what, who, and the polite question endings.
    *("何", "誰", "ですか", "ますか"),
)
"""Words that only make a sentence a question, cut out of a query's runs wherever they
occur: the spaceless scripts' counterpart of the stop words ("what", "is", "can",
"that") PostgreSQL leaves out of English queries. Only the relevance floor's share of the
query reads runs without them (the full-text query keeps every pair); a content word
holding one of them (会计) still counts by its other characters, which the database
indexes one by one too."""

QUESTION_RUNS = frozenset(
    # Korean writes spaces between words: its question words and verb endings, whole.
    {
        *("뭐", "뭘", "무엇", "무엇을", "무슨", "뭐야", "뭐예요", "어디", "어디서", "어디에"),
        *("언제", "누구", "누가", "왜", "어떻게", "어떤", "몇", "해", "해요", "했어", "했어요"),
        *("있어", "있어요", "있나요", "이야", "이에요", "예요", "인가요", "입니까", "나요"),
    }
)
"""Runs left out of a query when they are one of these words as a whole."""

_QUESTION_PART = re.compile("|".join(sorted(QUESTION_PARTS, key=len, reverse=True)))


def terms_asked(text: str, words: Callable[[str], list[str]]) -> list[str]:
    """:func:`terms` of a query, less the words that only make it a question.

    ``"那辆大众是什么颜色？"`` asks about 大众 (the car) and 颜色 (colour): with its question
    words cut out, the pair 大众 is one of its three pairs, not one of eight, as
    "Volkswagen" is one of "What colour is the Volkswagen?"'s two words once English stop
    words are gone. A query of nothing but question words keeps them all.
    """
    found: list[str] = []
    for part in split_runs(unicodedata.normalize("NFKC", text)):
        if not is_run(part):
            found += words(part)
        elif part not in QUESTION_RUNS:
            for piece in _QUESTION_PART.split(part):
                found += pairs(piece) if piece else []
    return found or terms(text, words)


def terms(text: str, words: Callable[[str], list[str]]) -> list[str]:
    """``text``'s terms: ``words`` of its spaced parts, each run's character pairs.

    ``text`` is NFKC-normalised first (half-width kana read as full-width), as the
    database normalises what it indexes.
    """
    found: list[str] = []
    for part in split_runs(unicodedata.normalize("NFKC", text)):
        found += pairs(part) if is_run(part) else words(part)
    return found
