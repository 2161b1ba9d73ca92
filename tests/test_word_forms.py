"""A query finds a memory holding another form of its word (issue #38): Russian words in
another case, words typed without their accents, accented words in another form."""

from __future__ import annotations

import unicodedata

import pytest
from sqlalchemy import Engine, text

from kioku import KiokuStore, create_long_term_memory_tool
from kioku._db.text_search import TEXT_CONFIG
from kioku._stemming import stem
from tests.helpers import World, make_world, run_tool, search_payload

FORMS = [
    # (memory, a query holding one of its words in another form)
    ("{user} учится играть на гитаре", "гитара"),
    ("{user} живёт в Новосибирске", "Новосибирск"),
    ("Сестру {user} зовут Ольга", "сестра"),
    ("{user} работает учителем в школе", "учитель"),
    ("{user} planea viajar a Japón en abril", "Japon"),
    ("{user} hat zwei Brüder", "Bruder"),
    ("{user} mora em São Paulo", "Sao Paulo"),
    ("{user} học ở trường Nguyễn Du", "truong"),
    ("{user} met friends at two cafés downtown", "café"),
    ("{user} tem dois irmãos", "irmão"),
    ("{user} tiene tres niños", "¿Cómo se llama su niño?"),
    ("{user} a deux sœurs à Lyon", "sœur"),
    ("{user} schaut jedes Wochenende Fußball", "Fussball"),
    ("{user} hat einen Teddybär im Regal", "Teddybar"),
]
UNRELATED = [
    # Memories whose words without accents are short English words.
    "{user} làm việc ở ngân hàng",
    "{user} đi chợ mỗi sáng",
    "{user} sống ở Hà Nội",
    "{user} bán xe máy cũ",
    # English words that are Vietnamese ones without their tones; a Russian word that is
    # another with "й" written "и".
    "{user} has ten cats",
    "{user} wears a red hat every day",
    "Брат {user} — храбрый воин",
]
ABSENT = [
    "Какой у неё любимый цвет?",
    "Qual é o tipo sanguíneo dela?",
    "Where does she hang out?",
    "Who sang at the wedding?",
    "favourite song",
    "ban",
    "Con mèo tên gì?",
    "bài hát",
    "Когда началась война?",
]


@pytest.fixture
def world(store: KiokuStore) -> World:
    world = make_world(store)
    create = create_long_term_memory_tool(store)
    for content in [*(content for content, _ in FORMS), *UNRELATED]:
        args = {"memory_content": content, "memory_scope": "target_user", "target_user": "Alice"}
        saved = run_tool(create, args, world.context()).result
        assert saved["status"] == "memory_saved_successfully", (content, saved)
    return world


@pytest.mark.parametrize(("content", "query"), FORMS)
def test_another_form_of_a_word_finds_the_memory(world: World, content: str, query: str) -> None:
    payload = search_payload(world, query)
    assert payload["status"] == "memories_found", (query, payload)
    shown = unicodedata.normalize("NFKC", content.replace("{user}", "Alice"))
    assert any(line.endswith(shown) for line in payload["memories"]), (query, payload)


def test_the_word_as_written_still_finds_the_memory(world: World) -> None:
    payload = search_payload(world, "Japón")
    assert payload["memories"][0].endswith("Alice planea viajar a Japón en abril"), payload


@pytest.mark.parametrize("query", ABSENT)
def test_a_query_about_nothing_stored_finds_nothing(world: World, query: str) -> None:
    assert search_payload(world, query)["status"] == "no_memories_found"


WORDS = ["running", "cats", "libraries", "собаки", "Шарика", "лыжах", "café", "Brüder", "ёлки"]


@pytest.mark.parametrize("word", WORDS)
def test_python_stems_words_as_the_database_does(engine: Engine, word: str) -> None:
    """The common-word counts (``kioku._search.terms``) look up stems made in Python."""
    with engine.connect() as connection:
        lexemes = connection.execute(
            text(f"SELECT tsvector_to_array(to_tsvector('{TEXT_CONFIG}', :w))"), {"w": word}
        ).scalar_one()
    assert lexemes == [stem(word.lower())]
