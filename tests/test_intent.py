"""The intent gate (SPEC §9): table-driven, English and Japanese, positive and negative."""

from __future__ import annotations

import pytest

from kioku._intent import IntentGate, LocalePhrases, detect_long_term_memory_intent

POSITIVE = [
    "please remember my birthday",
    "Please remember my birthday is May 3",
    "Remember that I'm vegetarian.",
    "remember: I hate cilantro",
    "Can you remember that my cat is called Mochi?",
    "Could you remember my favourite colour is green?",
    "I want you to remember this",
    "don't forget I'm allergic to peanuts",
    "Don’t forget my sister's name is Aiko",
    "do not forget that the meeting moved to Friday",
    "note that I work nights",
    "Note this: the wifi password changed",
    "make a note: I prefer tabs",
    "commit to memory that we use UTC",
    "For future conversations, call me Ren",
    "for future reference, my timezone is JST",
    "keep in mind I'm left-handed",
    "from now on, answer in Japanese",
    "memorize my order: oat latte",
    "REMEMBER   MY   NAME",
    "ok. remember that i like jazz",
    "覚えておいて、私の誕生日は5月3日",
    "私の名前を覚えといて",
    "これ覚えてて！",
    "忘れないで、明日は会議があるよ",
    "猫の名前はモチって記憶して",
    "メモして：火曜日はジム",
    "今後のために、敬語はやめて",
    "ｒｅｍｅｍｂｅｒ my birthday",
]

NEGATIVE = [
    "I bought a new notebook",
    "the notes app crashed",
    "remembering is hard",
    "the remembrance day parade",
    "do you remember when we went to Kyoto?",
    "Do you remember my birthday?",
    "did you remember to water the plants?",
    "don't you remember me?",
    "Remember when we met?",
    "remember the time you crashed?",
    "I remember my first bike",
    "we don't remember the ending",
    "you remember what I said yesterday?",
    "what's the weather today",
    "I forgot my keys",
    "footnote: see above",
    "",
    "   ",
    "覚えてる？",
    "昨日のこと覚えていますか？",
    "ノートを買った",
    "メモ帳が見つからない",
    "忘れ物をした",
]


@pytest.mark.parametrize("message", POSITIVE)
def test_intent(message: str) -> None:
    assert detect_long_term_memory_intent(message), message


@pytest.mark.parametrize("message", NEGATIVE)
def test_no_intent(message: str) -> None:
    assert not detect_long_term_memory_intent(message), message


def test_table_is_large_enough() -> None:
    assert len(POSITIVE) + len(NEGATIVE) >= 40


def test_locales_are_extensible() -> None:
    gate = IntentGate({"de": LocalePhrases(("merk dir", "vergiss nicht"))})
    assert gate.detect("Merk dir bitte meinen Geburtstag")
    assert not gate.detect("please remember my birthday")  # only the configured locale
    assert not gate.detect("merkdirwürdig")
