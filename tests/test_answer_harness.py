"""The LoCoMo answer-accuracy harness (bench/answer.py) on a tiny synthetic conversation."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.answer import answer_questions, format_table, summarise
from bench.answer_models import (
    INVALID,
    JUDGE_PROMPT,
    READER_PROMPT,
    endpoint_host,
    model_name,
    models_from_env,
)
from bench.answer_scoring import (
    answer_in_context,
    judge_label,
    locomo_f1,
    multi_answer_f1,
    normalize_answer,
    scored_gold,
    token_f1,
)
from bench.common import open_store
from kioku import KiokuStore
from kioku._embeddings import EmbedderSpec, HashingEmbeddings
from kioku.testing import Script, ScriptedChatModel, say

ROOT = Path(__file__).resolve().parents[1]
ENDPOINT_VARIABLES = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "KIOKU_OPENAI_MODEL",
    "KIOKU_JUDGE_MODEL",
)

# A made-up conversation in LoCoMo's shape (no LoCoMo data in the repository).
SAMPLE: dict[str, Any] = {
    "sample_id": "synthetic-1",
    "conversation": {
        "speaker_a": "Aiko",
        "speaker_b": "Bruno",
        "session_1_date_time": "10:15 am on 3 March, 2023",
        "session_1": [
            {"speaker": "Aiko", "dia_id": "D1:1", "text": "I adopted a grey cat named Mochi."},
            {"speaker": "Bruno", "dia_id": "D1:2", "text": "Lovely! I am learning the cello."},
            {
                "speaker": "Aiko",
                "dia_id": "D1:3",
                "text": "Here is Mochi asleep.",
                "blip_caption": "a grey cat on a sofa",
            },
        ],
        "session_2_date_time": "9:40 pm on 21 April, 2023",
        "session_2": [
            {"speaker": "Bruno", "dia_id": "D2:1", "text": "I played my first concert yesterday."},
            {"speaker": "Aiko", "dia_id": "D2:2", "text": "I went hiking in the Alps last week."},
        ],
    },
    "qa": [
        {
            "question": "What is the name of Aiko's cat?",
            "answer": "Mochi",
            "evidence": ["D1:1"],
            "category": 4,
        },
        {
            "question": "When did Bruno play his first concert?",
            "answer": "20 April 2023",
            "evidence": ["D2:1"],
            "category": 2,
        },
        {
            "question": "Would Aiko enjoy a mountain holiday?",
            "answer": "Likely yes; she went hiking in the Alps",
            "evidence": ["D2:2"],
            "category": 3,
        },
        {
            "question": "What instrument does Aiko play?",
            "adversarial_answer": "cello",
            "evidence": ["D1:2"],
            "category": 5,
        },
        {"question": "What did Bruno eat?", "answer": "pasta", "evidence": ["D9:9"], "category": 4},
    ],
}
"""Three scored questions (categories 4, 2, 3); an adversarial one and one whose evidence
does not exist are left out, as by the retrieval protocol."""


@pytest.fixture
def bench_store(fresh_database: str) -> Iterator[KiokuStore]:
    store = open_store(fresh_database, EmbedderSpec(HashingEmbeddings(64), "hashing-64", 64))
    # Five memories: the reader gets all of them, whatever the relevance floor would say.
    store.settings = store.settings.model_copy(update={"relevance_similarity": -1.0})
    yield store
    store.close()


# --- scoring (pure) ---


def test_normalisation_drops_case_punctuation_articles_and_and() -> None:
    assert normalize_answer("The Cat, a Dog and AN owl!") == "cat dog owl"
    assert normalize_answer("  7 May,  2023. ") == "7 may 2023"


def test_token_f1() -> None:
    assert token_f1("Mochi", "mochi.") == 1.0
    assert token_f1("a grey cat", "the cat") == pytest.approx(2 / 3)  # P 1/2, R 1
    assert token_f1("running", "runs") == 1.0  # Porter stems as LoCoMo does
    assert token_f1("Paris", "London") == 0.0
    assert token_f1("", "London") == 0.0


def test_category_rules() -> None:
    assert scored_gold("Likely no; she wants to be a counselor", 3) == "Likely no"
    assert scored_gold("Not tough; keep it clean", 4) == "Not tough; keep it clean"
    assert scored_gold(2022, 2) == "2022"
    assert locomo_f1("likely no", "Likely no; she wants to be a counselor", 3) == 1.0
    assert locomo_f1("2022", 2022, 2) == 1.0
    # Multi-hop: each gold item against its best predicted item.
    assert multi_answer_f1("pottery, hiking", "hiking, pottery, painting") == pytest.approx(2 / 3)
    assert locomo_f1("pottery, hiking", "hiking, pottery, painting", 1) == pytest.approx(2 / 3)
    with pytest.raises(ValueError):
        locomo_f1("anything", "x", 5)


@pytest.mark.parametrize(
    ("reply", "label"),
    [
        ('{"label": "CORRECT"}', "CORRECT"),
        ('The dates match.\n```json\n{"label": "correct"}\n```', "CORRECT"),
        ('It names another city. {"label": "WRONG"}', "WRONG"),
        ("CORRECT", None),
        ('{"label": "MAYBE"}', None),
        ('{"label": CORRECT}', None),
        ("", None),
    ],
)
def test_judge_label(reply: str, label: str | None) -> None:
    assert judge_label(reply) == label


# --- the harness ---


def test_answers_scored_per_category_from_retrieved_memories(bench_store: KiokuStore) -> None:
    reader_script = Script([say("Mochi"), say("Last week"), say("Likely yes")])
    judge_script = Script(
        [
            say('Same name. {"label": "CORRECT"}'),
            say('{"label": "WRONG"}'),
            say("I think it is right."),  # no JSON: counted WRONG, and as invalid
        ]
    )
    answered = answer_questions(
        bench_store,
        [SAMPLE],
        ScriptedChatModel(script=reader_script),
        ScriptedChatModel(script=judge_script),
        k=10,
    )

    assert [(a.category, a.answer, a.f1) for a in answered] == [
        (4, "Mochi", 1.0),
        (2, "Last week", 0.0),
        (3, "Likely yes", 1.0),
    ]
    assert [a.judged for a in answered] == ["CORRECT", "WRONG", INVALID]
    summary = summarise(answered)
    assert list(summary) == ["2", "3", "4", "overall"]
    assert {key: (s.questions, s.f1) for key, s in summary.items()} == {
        "2": (1, 0.0),
        "3": (1, 1.0),
        "4": (1, 1.0),
        "overall": (3, pytest.approx(2 / 3)),
    }
    assert summary["4"].judge_accuracy == 1.0 and summary["2"].judge_accuracy == 0.0
    assert summary["overall"].judge_accuracy == pytest.approx(1 / 3)
    assert summary["overall"].judge_invalid == 1 and summary["3"].judge_invalid == 1
    assert all(a.memory_tokens > 0 and a.latency_ms > 0 for a in answered)
    # Five turns, k 10: every memory of the conversation is retrieved.
    assert sorted(answered[0].retrieved) == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2"]

    # The reader saw the question, the speakers, and the memories with their session dates.
    assert len(reader_script.prompts) == 3
    prompt = reader_script.prompts[1][0].text
    assert "Question: When did Bruno play his first concert?" in prompt
    assert "between Aiko and Bruno" in prompt
    assert "[21 April 2023] Bruno: I played my first concert yesterday." in prompt
    assert "[3 March 2023] Aiko: I adopted a grey cat named Mochi." in prompt
    assert "[3 March 2023] Aiko: Here is Mochi asleep. [image: a grey cat on a sofa]" in prompt
    # The judge got the whole gold answer and the reader's answer.
    judged = judge_script.prompts[2][0].text
    assert "Gold answer: Likely yes; she went hiking in the Alps" in judged
    assert "Generated answer: Likely yes" in judged

    table = format_table(summary)
    assert "3 open-domain" in table and "overall" in table


def test_limit_and_top_k(bench_store: KiokuStore) -> None:
    script = Script(fallback=say("Mochi"))
    answered = answer_questions(
        bench_store, [SAMPLE, SAMPLE], ScriptedChatModel(script=script), k=2, limit=2
    )
    assert len(answered) == 2 and len(script.prompts) == 2
    assert all(len(a.retrieved) == 2 and a.judged is None for a in answered)
    assert summarise(answered)["overall"].judge_accuracy is None
    # The limit was reached within the first sample, so the second (the same sample id,
    # which could not be stored twice) was never loaded.


def test_prompts_have_their_fields() -> None:
    for field in ("{speaker_a}", "{speaker_b}", "{memories}", "{question}"):
        assert field in READER_PROMPT
    for field in ("{question}", "{gold_answer}", "{generated_answer}"):
        assert field in JUDGE_PROMPT
    assert '"label"' in JUDGE_PROMPT


# --- the endpoint from the environment ---


def test_models_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://models.internal:8000/v1")
    monkeypatch.setenv("KIOKU_OPENAI_MODEL", "reader-model")
    monkeypatch.delenv("KIOKU_JUDGE_MODEL", raising=False)
    reader, judge = models_from_env(judge=True)
    assert judge is not None
    assert (model_name(reader), model_name(judge)) == ("reader-model", "reader-model")
    assert getattr(reader, "temperature", None) == 0
    assert endpoint_host() == "models.internal"

    monkeypatch.setenv("KIOKU_JUDGE_MODEL", "judge-model")
    monkeypatch.delenv("OPENAI_BASE_URL")
    reader, judge = models_from_env(judge=True)
    assert judge is not None and model_name(judge) == "judge-model"
    assert endpoint_host() == "api.openai.com"
    assert models_from_env(judge=False)[1] is None


def locomo(*args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    """``python -m bench.locomo`` with no endpoint configured unless ``extra`` sets one."""
    env = {k: v for k, v in os.environ.items() if k not in ENDPOINT_VARIABLES}
    env.update(extra)
    return subprocess.run(
        [sys.executable, "-m", "bench.locomo", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("key", [None, "", "   "])
def test_no_endpoint_is_one_line_and_exit_2(tmp_path: Path, key: str | None) -> None:
    # A blank key is no key: nothing is sent anywhere. A data file that does not exist:
    # nothing may be loaded before the check.
    result = locomo(
        "--answer",
        "--data",
        str(tmp_path / "none.json"),
        **({"OPENAI_API_KEY": key} if key is not None else {}),
    )
    assert result.returncode == 2
    lines = (result.stdout + result.stderr).strip().splitlines()
    assert len(lines) == 1 and "OPENAI_API_KEY" in lines[0]
    assert "Traceback" not in result.stderr


def test_answer_options_need_answer(tmp_path: Path) -> None:
    result = locomo("--judge", "--data", str(tmp_path / "none.json"))
    assert result.returncode == 2 and "go with --answer" in result.stderr


@pytest.mark.parametrize("content", [None, "not json", '{"a": 1}'])
def test_a_data_file_that_is_not_locomo_is_one_line(tmp_path: Path, content: str | None) -> None:
    data = tmp_path / "data.json"
    if content is not None:
        data.write_text(content)
    result = locomo("--embedder", "hashing", "--data", str(data))
    assert result.returncode == 2
    lines = (result.stdout + result.stderr).strip().splitlines()
    assert len(lines) == 1 and str(data) in lines[0], lines


def test_the_model_free_check_finds_the_gold_answer_as_a_run_of_words() -> None:
    context = "ID:3 (8 May 2023) Caroline: I went to the LGBTQ support group, and painted."
    assert answer_in_context(context, "LGBTQ support groups", 4) == 1.0  # stemmed
    assert answer_in_context(context, "8 May, 2023", 2) == 1.0  # punctuation dropped
    assert answer_in_context(context, "May 8 2023", 2) == 0.0  # not one unbroken run
    assert answer_in_context(context, "support group, pottery", 1) == 0.5  # list items
    assert answer_in_context(context, "Likely yes; she painted", 3) == 0.0  # before ";"
    assert answer_in_context(context, "the", 4) == 0.0  # nothing left to look for
    assert answer_in_context(context, 2023, 2) == 1.0  # a number as the answer
