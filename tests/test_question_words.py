"""The question words the relevance floor weighs a query without (pure lists)."""

from __future__ import annotations

import re
import unicodedata

from kioku._question_words import QUESTION_WORDS, without_paired_heads
from kioku._search.query import asked_words
from kioku._search.sql import _STOP_WORD


def test_the_words_are_written_as_a_query_reaches_the_statement() -> None:
    """Lower-case, NFKC, letters only: the words ``or_tsquery`` sends (no quote to escape)."""
    for word in QUESTION_WORDS:
        assert word == unicodedata.normalize("NFKC", word).lower(), word
        assert re.fullmatch(r"\w+", word), word


def test_words_that_are_content_or_names_elsewhere_are_not_listed() -> None:
    for word in ("bao", "comment", "apa", "yang", "wen", "cho", "dari", "cosa", "mana", "sao"):
        assert word not in QUESTION_WORDS, word


def test_the_floor_counts_them_as_stop_words() -> None:
    """One rule with the stop lists: a query of nothing else is weighed over all its words."""
    assert "'сколько'" in _STOP_WORD and "'quantos'" in _STOP_WORD


def test_a_word_asking_only_before_another_is_left_out_only_then() -> None:
    assert asked_words("Mực bao nhiêu tuổi rồi?") == ["mực", "nhiêu", "tuổi", "rồi"]
    assert asked_words("Does she like bao?") == ["does", "she", "like", "bao"]
    assert asked_words("bao nhiêu") == ["nhiêu"]  # the statement weighs it, then


def test_no_words_stay_no_words() -> None:
    assert without_paired_heads([]) == [] and without_paired_heads(["bao"]) == ["bao"]
