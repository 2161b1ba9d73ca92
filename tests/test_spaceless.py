"""Scripts written without spaces read as characters and pairs, in Python and in SQL alike."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

import kioku
from kioku._memory.reading import WORD
from kioku._search.query import asked_words, query_words
from kioku._spaceless import RUN_CLASS, ideographs, pairs, split_runs, terms, word_parts

SQL = Path(kioku.__path__[0]) / "_db" / "sql" / "kioku_search_text.sql"


def test_runs_are_cut_where_the_script_changes() -> None:
    assert split_runs("aliceは緑茶が大好き!") == ["alice", "は緑茶が大好き", "!"]
    assert pairs("緑茶") == ["緑茶"]
    assert pairs("テニス") == ["テニ", "ニス"]
    assert pairs("猫") == ["猫"]


def test_query_words_pair_spaceless_runs_and_keep_other_words() -> None:
    assert query_words("Does Alice like 緑茶?") == ["does", "alice", "like", "緑茶"]
    assert query_words("猫の名前は？") == ["猫の", "の名", "名前", "前は"]
    assert query_words("ﾃﾆｽ") == ["テニ", "ニス"]  # half-width kana read as full-width
    assert terms("กินข้าว", str.split) == ["กิ", "ิน", "นข", "ข้", "้า", "าว"]  # marks kept


def test_question_words_do_not_weigh_in_a_query() -> None:
    """The relevance floor counts a query's share over what it asks about."""
    assert asked_words("那辆大众是什么颜色？") == ["辆大", "大众", "颜色"]
    assert asked_words("아침마다 뭐 해?") == ["아침", "침마", "마다"]
    assert asked_words("猫は何？") == ["猫は"]
    assert asked_words("是什么？") == query_words("是什么？")  # nothing else: all kept
    assert asked_words("What colour is it?") == query_words("What colour is it?")
    # The full-text query keeps every pair: a content word holding one still matches.
    assert "会计" in query_words("会计是谁？") and asked_words("会计是谁？") == ["计"]


def test_the_database_uses_the_same_scripts() -> None:
    """The SQL function's character class is :data:`RUN_CLASS`, to the letter."""
    sql = re.sub(r"'\s*\|\|\s*'", "", SQL.read_text())
    assert f"'{RUN_CLASS}'" in sql


@pytest.mark.parametrize(
    "content",
    [
        "{user}は緑茶が大好きです",
        "{user}의 고양이 이름은 나비입니다",
        "ผมชอบแมว",
        "Alice likes tea",
    ],
)
def test_every_query_term_of_a_memory_is_in_its_index(engine: Engine, content: str) -> None:
    with engine.connect() as connection:
        lexemes = connection.execute(
            text("SELECT tsvector_to_array(to_tsvector('kioku_text', kioku_search_text(:c)))"),
            {"c": content},
        ).scalar_one()
        stems = connection.execute(
            text("SELECT tsvector_to_array(to_tsvector('kioku_text', :t))"),
            {"t": " ".join(query_words(content))},
        ).scalar_one()
    assert set(stems) <= set(lexemes)


def test_only_ideographs_stand_alone() -> None:
    assert ideographs("猫の名前はミケ") == ["猫", "名", "前"]
    assert ideographs("고양이") == [] and ideographs("แมว") == []


def test_words_for_comparing_memories_cut_runs_into_characters() -> None:
    """A name glued to a run is a word of its own; CJK runs are read a character at a time;
    Korean words and Thai runs stay whole."""
    assert word_parts("Yui2019年に猫", WORD) == ["Yui", "2019", "年", "に", "猫"]
    assert word_parts("Min은 고양이를 키워요", WORD) == ["Min", "은", "고양이를", "키워요"]
    assert word_parts("Somchaiชอบกาแฟ", WORD) == ["Somchai", "ชอบกาแฟ"]
    assert word_parts("Model3 and COVID19", WORD) == ["Model3", "and", "COVID19"]
