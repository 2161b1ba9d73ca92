"""Interrogatives of spaced languages do not weigh in the relevance floor's share (pure)."""

from __future__ import annotations

import unicodedata

import pytest

from kioku._question_words import QUESTION_PHRASES, QUESTION_WORDS, without_question_words
from kioku._search.query import asked_words


@pytest.mark.parametrize(
    ("question", "asked"),
    [
        ("Quantos anos tem o Tico?", ["anos", "tem", "o", "tico"]),  # tem, o: SQL's stop list
        ("Сколько лет Шарик?", ["лет", "шарик"]),
        ("Mực bao nhiêu tuổi rồi?", ["mực", "tuổi"]),
        ("Hộ chiếu của tôi ở đâu?", ["hộ", "chiếu"]),
        ("Où habite sa sœur ?", ["habite", "sa", "sœur"]),
        ("Wann hat Bruno Geburtstag?", ["hat", "bruno", "geburtstag"]),
        ("Berapa umur Oyen?", ["umur", "oyen"]),
        ("ماذا درست في الجامعة؟", ["درست", "الجامعة"]),
    ],
)
def test_a_question_weighs_what_it_asks_about(question: str, asked: list[str]) -> None:
    assert asked_words(question) == asked


def test_a_query_of_nothing_but_question_words_keeps_them() -> None:
    assert asked_words("Quem? Onde? Quando?") == ["quem", "onde", "quando"]
    assert asked_words("bao nhiêu") == ["bao", "nhiêu"]


def test_words_that_are_content_elsewhere_count() -> None:
    """A bun, a bird, AI and a name are not question words."""
    assert asked_words("Does she like bao?") == ["does", "she", "like", "bao"]
    for word in ("bao", "dove", "ai", "kim"):
        assert word not in QUESTION_WORDS


def test_a_phrase_takes_out_each_of_its_words_once() -> None:
    text = "Bao nhiêu con mèo, bao nhiêu?"
    words = ["bao", "nhiêu", "con", "mèo", "bao", "nhiêu"]
    assert without_question_words(text, words) == ["con", "mèo"]


def test_the_lists_are_written_as_queries_are_read() -> None:
    for word in (*QUESTION_WORDS, *QUESTION_PHRASES):
        assert word == unicodedata.normalize("NFKC", word).lower(), word
