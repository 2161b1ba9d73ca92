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

_KANA = r"\u3040-\u30ff"
_IDEOGRAPHS = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
"""CJK ideographs (and extension A), CJK compatibility ideographs."""
RUN_CLASS = (
    r"[\u0e00-\u0eff\u1000-\u109f\u1100-\u11ff\u1780-\u17ff" + _KANA
    + r"\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+"
)
"""Thai and Lao, Myanmar, Hangul Jamo, Khmer, kana, Hangul compatibility Jamo, CJK
ideographs (and extension A), Hangul syllables, CJK compatibility ideographs (in code
point order, as ``kioku/_db/sql/kioku_search_text.sql`` writes them)."""

_RUN = re.compile(RUN_CLASS)
_IDEOGRAPH = re.compile(f"[{_IDEOGRAPHS}]")


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


_CHARACTER_RUN = re.compile(f"[{_KANA}{_IDEOGRAPHS}]+")
"""Kana and CJK ideographs: Japanese and Chinese, whose characters are read one by one."""
_GRAMMAR = re.compile(
    r"[\u3040-\u309f的地得了着著过過是在和与與也都很就才还還吗嗎呢吧啊把被给給对對从從]"
)
"""Characters that only bind a sentence together: hiragana (Japanese particles and
endings) and Chinese particles, aspect markers, the copula, prepositions and adverbs."""


def word_parts(text: str, word: re.Pattern[str]) -> list[str]:
    """``text``'s words, for comparing memories word by word.

    Spaceless runs are cut out first (``"Yui2019年に"`` is ``"Yui"``, ``"2019"`` and
    ``"年に"``: a word touching a run is cut where letters meet digits), the rest is
    read by the ``word`` pattern. A Japanese or Chinese run is read as its characters,
    the smallest unit of meaning those scripts mark; Korean (spaced) and Thai runs stay
    whole.
    """
    parts: list[str] = []
    pieces = split_runs(text)
    for at, part in enumerate(pieces):
        if _CHARACTER_RUN.fullmatch(part):
            parts += list(part)
        elif is_run(part):
            parts.append(part)
        else:
            found = word.findall(part)
            after_run = at > 0 and part[0].isalnum()
            before_run = at + 1 < len(pieces) and part[-1].isalnum()
            for index, each in enumerate(found):
                touching = (index == 0 and after_run) or (index == len(found) - 1 and before_run)
                parts += _DIGITS_APART.findall(each) if touching else [each]
    return parts


_DIGITS_APART = re.compile(r"\d+|\D+")


def is_character(word: str) -> bool:
    """Whether ``word`` is one Japanese or Chinese character (from :func:`word_parts`)."""
    return len(word) == 1 and _CHARACTER_RUN.fullmatch(word) is not None


def is_hiragana(word: str) -> bool:
    """Whether ``word`` is one hiragana character."""
    return len(word) == 1 and "\u3040" <= word <= "\u309f"


def is_grammar(word: str) -> bool:
    """Whether ``word`` is a character that only binds a sentence (:data:`_GRAMMAR`)."""
    return len(word) == 1 and _GRAMMAR.fullmatch(word) is not None
