"""The reader and the judge of the answer harness (:mod:`bench.answer`): prompts, models.

The reader answers a LoCoMo question from kioku's memories with :data:`READER_PROMPT`; the
judge labels the answer with Mem0's :data:`JUDGE_PROMPT`. Both come from the environment
(:func:`models_from_env`), any OpenAI-compatible endpoint.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlparse

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage

from bench.answer_scoring import judge_label
from kioku._models import ask_model
from kioku._openai_env import DEFAULT_OPENAI_MODEL, env_value, openai_base_url, openai_model
from kioku._search.rows import SearchHit

READER_PROMPT = """\
You are answering a question about a long conversation between {speaker_a} and \
{speaker_b}, using memories retrieved from it. Each memory is one message of the \
conversation, after the date on which it was said.

# INSTRUCTIONS:
1. Answer from the memories; when they contradict each other, trust the most recent one.
2. Pay attention to the dates. Turn relative time references into absolute dates, \
months or years using the date of the memory that makes them: a memory of 4 May 2022 \
saying "went to India last year" means 2021; "last Friday" in a memory of Monday \
15 May 2023 means 12 May 2023. Never answer with a relative reference.
3. Do not confuse people mentioned in a message with the speakers.
4. Answer with a short phrase of at most 5-6 words, using the words of the memories \
where possible, without explanation.

# MEMORIES:
{memories}

Question: {question}
Answer:"""
"""The reader's prompt, one user message.

In the style of the published LoCoMo evaluations (LoCoMo's own QA prompt, Mem0's
``ANSWER_PROMPT``): answer from the memories, resolve relative dates against the memory's
date, a short phrase (short answers are what token F1 rewards). Fields: ``speaker_a``,
``speaker_b``, ``memories`` (:func:`memory_lines`: ``[8 May 2023] Caroline: …``, one a
line, in kioku's ranking order), ``question``. Unlike Mem0's prompt it does not ask the
model to show its work, which would end up in the scored answer.
"""

# Follows the judge prompt Mem0 published with its LoCoMo evaluation (ACCURACY_PROMPT in
# mem0ai/mem0, evaluation/metrics/llm_judge.py, Apache-2.0), wording kept so that judge
# accuracies compare with published ones; only quotes and line breaks are normalised.
JUDGE_PROMPT = """\
Your task is to label an answer to a question as 'CORRECT' or 'WRONG'. You will be given \
the following data:
    (1) a question (posed by one user to another user),
    (2) a 'gold' (ground truth) answer,
    (3) a generated answer
which you will score as CORRECT/WRONG.

The point of the question is to ask about something one user should know about the \
other user based on their prior conversations.
The gold answer will usually be a concise and short answer that includes the referenced \
topic, for example:
Question: Do you remember what I got the last time I went to Hawaii?
Gold answer: A shell necklace
The generated answer might be much longer, but you should be generous with your grading \
- as long as it touches on the same topic as the gold answer, it should be counted as \
CORRECT.

For time related questions, the gold answer will be a specific date, month, year, etc. \
The generated answer might be much longer or use relative time references (like "last \
Tuesday" or "next month"), but you should be generous with your grading - as long as it \
refers to the same date or time period as the gold answer, it should be counted as \
CORRECT. Even if the format differs (e.g., "May 7th" vs "7 May"), consider it CORRECT if \
it's the same date.

Now it's time for the real question:
Question: {question}
Gold answer: {gold_answer}
Generated answer: {generated_answer}

First, provide a short (one sentence) explanation of your reasoning, then finish with \
CORRECT or WRONG.
Do NOT include both CORRECT and WRONG in your response, or it will break the evaluation \
script.

Just return the label CORRECT or WRONG in a json format with the key as "label".
"""
"""The judge's prompt, one user message. Fields: question, gold_answer, generated_answer."""

NO_ENDPOINT = (
    "bench.locomo --answer needs a model endpoint: set OPENAI_API_KEY (optionally "
    "OPENAI_BASE_URL for an OpenAI-compatible server, KIOKU_OPENAI_MODEL for the reader, "
    f"default {DEFAULT_OPENAI_MODEL}, and KIOKU_JUDGE_MODEL for --judge)"
)
"""The one line printed when no endpoint is configured."""

INVALID = "INVALID"
"""The judge outcome of a reply without a usable label (counted as WRONG)."""


def memory_date(when: datetime) -> str:
    """A memory's creation date as LoCoMo's answers write dates ("8 May 2023")."""
    when = when.astimezone(UTC)
    return f"{when.day} {when:%B %Y}"


def memory_lines(hits: Sequence[SearchHit]) -> str:
    """The memories block of :data:`READER_PROMPT`: one dated memory a line."""
    return "\n".join(f"[{memory_date(hit.created_at)}] {hit.content}" for hit in hits)


def reader_prompt(sample: dict[str, Any], question: str, memories: str) -> str:
    """:data:`READER_PROMPT` filled in for one question of ``sample``."""
    conversation = sample["conversation"]
    return READER_PROMPT.format(
        speaker_a=conversation["speaker_a"],
        speaker_b=conversation["speaker_b"],
        memories=memories,
        question=question,
    )


def ask(model: BaseChatModel, prompt: str) -> str:
    """The text of ``model``'s reply to ``prompt`` sent as one user message."""
    return ask_model(model, [HumanMessage(prompt)]).strip()


def judge_answer(judge: BaseChatModel, question: str, gold: str, answer: str) -> str:
    """The judge's verdict on ``answer``: "CORRECT", "WRONG" or :data:`INVALID`."""
    reply = ask(
        judge, JUDGE_PROMPT.format(question=question, gold_answer=gold, generated_answer=answer)
    )
    return judge_label(reply) or INVALID


def model_name(model: BaseChatModel) -> str:
    """The model a chat model calls (``model_name`` of ``ChatOpenAI``), else its type."""
    name = getattr(model, "model_name", None) or getattr(model, "model", None)
    return str(name) if name else model._llm_type


def endpoint_host() -> str:
    """The host of ``OPENAI_BASE_URL`` (never the key), or OpenAI's default host."""
    base = env_value("OPENAI_BASE_URL")
    return (urlparse(base).hostname or base) if base else "api.openai.com"


def models_from_env(judge: bool) -> tuple[BaseChatModel, BaseChatModel | None]:
    """The reader and (with ``judge``) the judge from the environment; temperature 0.

    Call only with ``OPENAI_API_KEY`` set.
    """
    from langchain_openai import ChatOpenAI

    base_url = openai_base_url()
    reader_model = openai_model()
    judge_model = env_value("KIOKU_JUDGE_MODEL") or reader_model

    def chat(model: str) -> BaseChatModel:
        return ChatOpenAI(model=model, base_url=base_url, temperature=0, timeout=120)

    return chat(reader_model), chat(judge_model) if judge else None
