"""Japanese, Chinese and Korean words the duplicate check reads (pure).

Those scripts are compared a character at a time (:func:`kioku._spaceless.word_parts`),
so the words that decide a comparison are found in the text itself: numbers, negations,
relatives, the words placing a statement in the past and the grammar, each as its English
counterpart would be read (:mod:`kioku._memory.reading`).
"""

from __future__ import annotations

import re

_DIGIT_GROUPS = ("〇零", "一", "二两兩", "三", "四", "五", "六", "七", "八", "九")
_DIGITS = {character: value for value, group in enumerate(_DIGIT_GROUPS) for character in group}
_UNITS = {"十": 10, "百": 100, "千": 1000}
_MYRIADS = {"万": 10_000, "萬": 10_000, "億": 100_000_000, "亿": 100_000_000}
_NUMERALS = "".join([*_DIGITS, *_UNITS, *_MYRIADS])
_NUMBER = re.compile(f"[0-9{_NUMERALS}]*[{_NUMERALS}][0-9{_NUMERALS}]*")
"""A number holding numerals, digits among them or not (二十一, 5万, 十五万)."""


def in_digits(text: str) -> str:
    """``text`` with its numbers in numerals written in digits: 二十一 is 21, 5万 50000."""
    return _NUMBER.sub(lambda match: f" {_value(match.group())} ", text)


def _value(run: str) -> int:
    if all(character in _DIGITS or character.isdigit() for character in run):
        return int("".join(str(_DIGITS.get(character, character)) for character in run))
    total = section = digit = 0
    for character in run:
        if character.isdigit():
            digit = digit * 10 + int(character)
        elif character in _DIGITS:
            digit = _DIGITS[character]
        elif character in _UNITS:
            section += (digit or 1) * _UNITS[character]
            digit = 0
        else:
            total += ((section + digit) or 1) * _MYRIADS[character]
            section = digit = 0
    return total + section + digit


NEGATION = re.compile(
    "ません|(?<![少危])ない|なかっ|嫌い|苦手|不(?!動産|动产|過|过|错|錯|同)|没|沒|"
    "无(?!论|論|印)|無(?!料|論|印)|讨厌|討厭"
)
"""Negations and dislikes, read as "not" (their characters are no words of their own);
not in words that only hold them (少ない "few", 不動産 "real estate", 無料 "free")."""

FUTURE = re.compile(
    "明年|明天|后天|後天|下周|下个月|下個月|下星期|打算|计划|計劃|准备|準備|将来|將來|"
    "来年|明日|来週|来月|予定|つもり|내년|내일|다음 주|다음 달|예정"
)
"""Words placing a statement in the future or saying it is planned ("打算去日本" against
"去过日本")."""

PAST = re.compile(
    "去年|昨天|前天|上周|上个月|上個月|上星期|以前|曾经|曾經|昨日|先週|先月|昔|"
    "작년|어제|그저께|지난주|지난달|지난해|예전|옛날"
)
"""Words placing a statement in the past ("去年结婚了" against "明年要结婚"; Korean's
"작년에" against "내년에")."""

_RELATION_GROUPS = (
    ("son", "儿子 兒子 息子"),
    ("daughter", "女儿 女兒 娘"),
    ("child", "孩子 小孩 子ども 子供"),
    ("husband", "丈夫 老公 夫"),
    ("wife", "妻子 老婆 妻"),
    ("father", "父亲 父親 爸爸 父"),
    ("mother", "母亲 母親 妈妈 媽媽 母"),
    ("brother", "哥哥 弟弟 兄 弟"),
    ("sister", "姐姐 妹妹 姉 妹"),
    ("grandfather", "爷爷 爺爺 外公 祖父"),
    ("grandmother", "奶奶 外婆 祖母"),
    ("boyfriend", "男朋友 彼氏"),
    ("girlfriend", "女朋友"),
    ("friend", "朋友 友達 友人"),
    ("colleague", "同事 同僚"),
    ("boss", "老板 老闆 上司"),
)
RELATIONS = {word: group for group, words in _RELATION_GROUPS for word in words.split()}
"""Words naming someone related to the subject, each to its group's English name."""
_RELATION = re.compile("|".join(sorted(RELATIONS, key=len, reverse=True)))
_FALSE_RELATIVES = re.compile("大丈夫|丈夫な|酵母|父母")
"""Words holding a relative's character that name none (大丈夫 "fine", 酵母 "yeast"),
and 父母 ("parents"), both at once."""


def relations(text: str) -> set[str]:
    """The relatives ``text`` names (longest words first: 男朋友 is not 朋友)."""
    return {RELATIONS[found] for found in _RELATION.findall(_FALSE_RELATIVES.sub(" ", text))}


ENDINGS = frozenset(
    ("です", "だ", "である", "でした", "だった", "ます", "ました", "ません", "ている")
    + ("ています", "ていた", "てる", "する", "します", "した", "しています", "は", "が")
    + ("を", "に", "で", "へ", "と", "の", "も", "や", "から", "まで", "より")
)
"""Japanese particles and endings: a span of them swapped for another is grammar
("です" / "だ", "を" / "が"), where other hiragana words carry meaning (りんご / みかん)."""
