"""Japanese, Chinese and Korean words the duplicate check reads (pure).

Those scripts are compared a character at a time (:func:`kioku._spaceless.word_parts`),
so the words that decide a comparison are found in the text itself: numerals, negations,
relatives and the words placing a statement in the past, each as its English counterpart
would be read (:mod:`kioku._memory.reading`).
"""

from __future__ import annotations

import re

NUMERALS = {
    character: str(value)
    for value, characters in enumerate(
        ["〇零", "一", "二两兩", "三", "四", "五", "六", "七", "八", "九", "十"]
    )
    for character in characters
} | {"百": "100", "千": "1000", "万": "10000", "萬": "10000"}
"""Numerals, read a character at a time (二十 is 2 and 10)."""

NEGATION = re.compile("ません|ない|なかっ|嫌い|苦手|不|没|沒|无|無|讨厌|討厭")
"""Negations and dislikes, read as "not" (their characters are no words of their own)."""

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
    ("girlfriend", "女朋友 彼女"),
    ("friend", "朋友 友達 友人"),
    ("colleague", "同事 同僚"),
    ("boss", "老板 老闆 上司"),
)
RELATIONS = {word: group for group, words in _RELATION_GROUPS for word in words.split()}
"""Words naming someone related to the subject, each to its group's English name."""
_RELATION = re.compile("|".join(sorted(RELATIONS, key=len, reverse=True)))


def relations(text: str) -> set[str]:
    """The relatives ``text`` names (longest words first: 男朋友 is not 朋友)."""
    return {RELATIONS[found] for found in _RELATION.findall(text)}
