"""Literal words are found in every script (issue #38): a query sharing a word with a
memory finds it, in languages written with and without spaces, with the hashing embedder
and no API key."""

from __future__ import annotations

import unicodedata
from datetime import timedelta

import pytest
from langchain_core.messages import HumanMessage
from sqlalchemy import insert

from kioku import ContextBudgets, KiokuStore, create_long_term_memory_tool
from kioku._context_build.build import ContextBuilder
from kioku._db.models import Memory
from kioku._memory.windows import MEMORY_WINDOW
from tests.helpers import T0, World, make_world, run_tool, search_payload

FACTS: dict[str, list[tuple[str, str]]] = {
    # language: (memory, a query sharing a word with it only)
    "ja": [
        ("{user}は緑茶が大好きです", "緑茶"),
        ("{user}の猫の名前はミケです", "猫の名前は？"),
        ("{user}は毎週土曜日に大阪でテニスをします", "テニス"),
    ],
    "zh": [
        ("{user}喜欢喝乌龙茶", "乌龙茶"),
        ("{user}的女儿在北京上大学", "北京"),
        ("{user}每天早上跑步五公里", "跑步"),
        ("{user}开一辆红色的丰田", "丰田"),
    ],
    "ko": [
        ("{user}의 고양이 이름은 나비입니다", "고양이"),
        ("{user}는 서울에서 간호사로 일합니다", "간호사"),
        ("{user}의 고향은 부산입니다", "부산"),
        ("{user}는 주말마다 등산을 합니다", "등산"),
    ],
    "th": [
        ("{user}ชอบกินข้าวมันไก่", "ข้าวมันไก่"),
        ("{user}มีสุนัขชื่อโบ", "สุนัข"),
        ("{user}ทำงานเป็นครูที่เชียงใหม่", "เชียงใหม่"),
    ],
    "en": [
        ("{user} plays the cello in a quartet", "cello"),
        ("{user} is allergic to shellfish", "shellfish"),
        ("{user} grew up in Halifax", "Halifax"),
    ],
    "de": [
        ("{user} hat einen Dackel namens Bruno", "Wer ist Bruno?"),
        ("{user} trinkt morgens immer Pfefferminztee", "Pfefferminztee"),
        ("{user} wohnt in Heidelberg", "Heidelberg"),
        ("{user} spielt Handball im Verein", "Handball"),
    ],
    "es": [
        ("{user} tiene un hijo llamado Mateo", "¿Quién es Mateo?"),
        ("{user} tiene una tortuga llamada Lola", "tortuga"),
        ("{user} trabaja como panadera en Sevilla", "panadera"),
        ("{user} colecciona sellos antiguos", "sellos"),
    ],
}


@pytest.fixture
def world(store: KiokuStore) -> World:
    world = make_world(store)
    create = create_long_term_memory_tool(store)
    for facts in FACTS.values():
        for content, _ in facts:
            args = {
                "memory_content": content,
                "memory_scope": "target_user",
                "target_user": "Alice",
            }
            saved = run_tool(create, args, world.context()).result
            assert saved["status"] == "memory_saved_successfully", (content, saved)
    return world


@pytest.mark.parametrize("language", sorted(FACTS))
def test_a_shared_word_finds_the_memory(world: World, language: str) -> None:
    for content, query in FACTS[language]:
        payload = search_payload(world, query)
        assert payload["status"] == "memories_found", (query, payload)
        shown = unicodedata.normalize("NFKC", content.replace("{user}", "Alice"))
        assert any(line.endswith(shown) for line in payload["memories"][:5]), (query, payload)


UNRELATED = {
    "ja": "自転車の色は？",
    # Not "他喜欢什么咖啡？": it shares "喜欢" (likes) with a memory, as "What coffee does
    # she like?" shares "like"; half of what it asks about, like any such question.
    "zh": "他骑什么自行车？",
    "ko": "자동차 색깔",
    "th": "รถยนต์สีอะไร",
    "en": "which bicycle does she ride?",
    "de": "Welches Fahrrad fährt sie?",
    "es": "¿Qué bicicleta usa?",
}


@pytest.mark.parametrize("language", sorted(UNRELATED))
def test_a_query_about_nothing_in_memory_finds_nothing(world: World, language: str) -> None:
    payload = search_payload(world, UNRELATED[language])
    assert payload["status"] == "no_memories_found", payload


def test_an_overflowing_block_shows_the_memory_sharing_a_word(store: KiokuStore) -> None:
    """The context build ranks an overflowing block by the message in Japanese too."""
    world = make_world(store)
    rows = [
        {
            "scope": "server",
            "server_id": "srv-a",
            "persona_lineage_id": world.persona.lineage_id,
            "content": f"毎週の予定についてのメモ、その{i}番",
            "created_at": T0 + timedelta(minutes=i),
        }
        for i in range(MEMORY_WINDOW + 300)
    ]
    rows[0]["content"] = "Wi-Fiのパスワードは青いバインダーに書いてあります"  # the oldest of all
    with store.transaction() as session:
        session.execute(insert(Memory), rows)
    built = ContextBuilder(store).build(
        world.context(), [HumanMessage("パスワードはどこ？", name="Alice")]
    )
    assert "青いバインダー" in "\n".join(item.text for item in built.items)


QUESTIONS = [
    ("{user}の猫の名前はミケです", "ミケは元気？"),
    ("{user}의 고양이 이름은 나비입니다", "나비는 잘 지내?"),
    ("{user}喜欢喝乌龙茶", "乌龙茶好喝吗？"),
    ("{user} wohnt in Heidelberg", "Seit wann wohnt sie in Heidelberg?"),
    # The question words would outweigh the shared word if they counted.
    ("{user}开一辆红色的丰田", "那辆丰田是哪一年的？"),
    ("{user}는 주말마다 등산을 합니다", "요즘 주말에 뭐 해요?"),
]


@pytest.mark.parametrize(("content", "question"), QUESTIONS)
def test_a_question_around_a_shared_word_finds_the_memory(
    world: World, content: str, question: str
) -> None:
    """Particles, question words and verbs around the shared word do not hide it."""
    payload = search_payload(world, question)
    assert payload["status"] == "memories_found", (question, payload)
    shown = unicodedata.normalize("NFKC", content.replace("{user}", "Alice"))
    assert any(line.endswith(shown) for line in payload["memories"]), (question, payload)


QUESTIONED = {
    # language: (memory, a question around a word it shares, a question about nothing in it)
    "pt": (
        "{user} tem um papagaio chamado Tico",
        "Quantos anos tem o Tico?",
        "Qual é o tipo sanguíneo dela?",
    ),
    "ru": (
        "У {user} есть собака по кличке Шарик",
        "Сколько лет Шарик?",
        "Какой у неё любимый цвет?",
    ),
    "vi": (
        "{user} cất hộ chiếu trong ngăn kéo bàn làm việc",
        "Hộ chiếu của tôi ở đâu?",
        "Cô ấy lái xe màu gì?",
    ),
    "fr": (
        "{user} joue du violoncelle le dimanche",
        "Depuis quand joue-t-elle du violoncelle ?",
        "Quel est son groupe sanguin ?",
    ),
    "ar": (
        "{user} تعمل ممرضة في الإسكندرية",
        "في أي مستشفى تعمل في الإسكندرية؟",
        "ما لون سيارتها؟",
    ),
    "id": ("Kucing {user} bernama Oyen", "Berapa umur Oyen?", "Apa warna mobilnya?"),
}


@pytest.fixture
def questioned(store: KiokuStore) -> World:
    world = make_world(store)
    create = create_long_term_memory_tool(store)
    for content, _, _ in QUESTIONED.values():
        args = {"memory_content": content, "memory_scope": "target_user", "target_user": "Alice"}
        saved = run_tool(create, args, world.context()).result
        assert saved["status"] == "memory_saved_successfully", (content, saved)
    return world


@pytest.mark.parametrize("language", sorted(QUESTIONED))
def test_question_words_of_spaced_languages_do_not_hide_the_shared_word(
    questioned: World, language: str
) -> None:
    """Interrogatives PostgreSQL's stop lists miss (or have no list for) are not counted."""
    content, question, _ = QUESTIONED[language]
    payload = search_payload(questioned, question)
    assert payload["status"] == "memories_found", (question, payload)
    shown = unicodedata.normalize("NFKC", content.replace("{user}", "Alice"))
    assert any(line.endswith(shown) for line in payload["memories"]), (question, payload)


def test_a_question_of_only_question_and_stop_words_is_weighed_over_all_of_them(
    store: KiokuStore,
) -> None:
    """ "Onde ela está?" ("where is she?") shares "está" with a memory: one word of three."""
    world = make_world(store)
    args = {
        "memory_content": "{user} está cansada hoje",
        "memory_scope": "target_user",
        "target_user": "Alice",
    }
    run_tool(create_long_term_memory_tool(store), args, world.context())
    assert search_payload(world, "Onde ela está?")["status"] == "no_memories_found"


@pytest.mark.parametrize("language", sorted(QUESTIONED))
def test_a_question_about_nothing_stored_still_finds_nothing(
    questioned: World, language: str
) -> None:
    _, _, absent = QUESTIONED[language]
    assert search_payload(questioned, absent)["status"] == "no_memories_found"


def test_an_overflowing_block_ranks_a_vietnamese_question_by_its_shared_word(
    store: KiokuStore,
) -> None:
    """With memories embedded (the relevance floor applies), the context build finds it."""
    world = make_world(store)
    create = create_long_term_memory_tool(store)
    facts = [f"{{user}} ghi chú số {i} về lịch làm việc hằng tuần" for i in range(60)]
    for content in ["{user} cất hộ chiếu trong ngăn kéo bàn làm việc", *facts]:
        args = {"memory_content": content, "memory_scope": "target_user", "target_user": "Alice"}
        run_tool(create, args, world.context())
    built = ContextBuilder(store, budgets=ContextBudgets(personal_memories=200)).build(
        world.context(), [HumanMessage("Hộ chiếu của tôi ở đâu?", name="Alice")]
    )
    assert "ngăn kéo" in "\n".join(item.text for item in built.items)
