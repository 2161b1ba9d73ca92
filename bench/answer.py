"""Answer accuracy on LoCoMo: kioku's retrieval feeding a reader model, end to end.

Run: ``.venv/bin/python -m bench.locomo --answer [--judge] [--top-k 10] [--limit N]
[--json PATH]``. Each conversation is loaded into its own scope as for the retrieval
figures (``../shared/bench-data/README.md``); for every question the retrieval protocol
scores (categories 1-4 with usable evidence), kioku's hybrid search
(``rank_candidates(...).hits()``) finds the top k memories, and a reader model answers from
them with :data:`bench.answer_models.READER_PROMPT`. Answers are scored with LoCoMo's token F1
(:mod:`bench.answer_scoring`) and, with ``--judge``, by an LLM judge with Mem0's
:data:`bench.answer_models.JUDGE_PROMPT`.

Models come from the environment, any OpenAI-compatible endpoint: ``OPENAI_API_KEY``
(required), ``OPENAI_BASE_URL``, ``KIOKU_OPENAI_MODEL`` (reader, default gpt-4o-mini),
``KIOKU_JUDGE_MODEL`` (judge, default the reader's model); temperature 0.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from bench.answer_models import (
    INVALID,
    NO_ENDPOINT,
    ask,
    endpoint_host,
    judge_answer,
    memory_lines,
    model_name,
    models_from_env,
    reader_prompt,
)
from bench.answer_scoring import locomo_f1
from bench.locomo_data import LoadedConversation, evidence_ids, load_conversation
from kioku import KiokuStore
from kioku._calibration import relevance_floor
from kioku._context_build.tokens import TiktokenCounter, TokenCounter
from kioku._embeddings import embedding_text
from kioku._errors import ModelCallError, one_line
from kioku._openai_env import (
    openai_key_set,
)
from kioku._search.engine import rank_candidates
from kioku._search.rows import SearchHit

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
"""The scored LoCoMo categories (data README); 5, adversarial, is left out."""


@dataclass(frozen=True)
class Question:
    """One scored LoCoMo question."""

    question: str
    answer: object
    category: int
    evidence: list[str]


@dataclass(frozen=True)
class Answered:
    """One question answered and scored."""

    sample_id: str
    question: str
    gold: str
    category: int
    answer: str
    f1: float
    judged: str | None
    """"CORRECT", "WRONG", :data:`INVALID`, or None without a judge."""
    memory_tokens: int
    latency_ms: float
    """Retrieval (query embedding and ranking) plus the reader's reply."""
    evidence: list[str]
    retrieved: list[str]


@dataclass(frozen=True)
class Summary:
    """Figures over a group of answered questions."""

    questions: int
    f1: float
    judge_accuracy: float | None
    judge_invalid: int
    memory_tokens: float
    latency_ms: float


def scored_questions(sample: dict[str, Any], known: set[str]) -> Iterator[Question]:
    """The questions of ``sample`` the retrieval protocol scores, in the data's order.

    Categories 1-4 with at least one usable evidence id among ``known`` turns (the same
    selection as the recall figures of ``bench/locomo.py``).
    """
    for qa in sample["qa"]:
        category = int(qa.get("category", 0))
        evidence = evidence_ids(qa.get("evidence", []), known)
        if category in CATEGORIES and evidence:
            yield Question(qa["question"], qa.get("answer", ""), category, evidence)


def retrieve(
    store: KiokuStore, loaded: LoadedConversation, question: str, k: int
) -> list[SearchHit]:
    """The top ``k`` of kioku's search for ``question`` (the search tool's relevance floor)."""
    vector = store.embedder.embeddings.embed_query(embedding_text(question))
    with store.sessions() as session:
        return rank_candidates(
            session,
            loaded.scope,
            question,
            vector,
            now=loaded.now,
            limit=k,
            aids=store.search_aids,
            floor=relevance_floor(store.embedder.model, store.settings.relevance_similarity),
        ).hits()


def answer_one(
    store: KiokuStore,
    sample: dict[str, Any],
    loaded: LoadedConversation,
    question: Question,
    models: tuple[BaseChatModel, BaseChatModel | None],
    k: int,
    count_tokens: TokenCounter,
) -> Answered:
    """Retrieve, ask the reader (``models[0]``), score, and ask the judge (``models[1]``)."""
    reader, judge = models
    started = time.perf_counter()
    hits = retrieve(store, loaded, question.question, k)
    memories = memory_lines(hits)
    answer = ask(reader, reader_prompt(sample, question.question, memories))
    latency_ms = (time.perf_counter() - started) * 1000
    gold = str(question.answer)
    return Answered(
        sample_id=sample["sample_id"],
        question=question.question,
        gold=gold,
        category=question.category,
        answer=answer,
        f1=locomo_f1(answer, question.answer, question.category),
        judged=None if judge is None else judge_answer(judge, question.question, gold, answer),
        memory_tokens=count_tokens(memories),
        latency_ms=latency_ms,
        evidence=question.evidence,
        retrieved=[loaded.dia_ids[hit.id] for hit in hits],
    )


def answer_questions(
    store: KiokuStore,
    samples: Sequence[dict[str, Any]],
    reader: BaseChatModel,
    judge: BaseChatModel | None = None,
    *,
    k: int = 10,
    limit: int | None = None,
    count_tokens: TokenCounter | None = None,
    progress: Callable[[Answered], None] | None = None,
) -> list[Answered]:
    """Load each LoCoMo sample into its own scope and answer its scored questions.

    Args:
        store: a store with the embedder to use, on a database without these samples.
        samples: LoCoMo samples (``sample_id``, ``conversation``, ``qa``).
        reader: the model answering from the retrieved memories.
        judge: the model grading answers against the gold ones, or None for F1 only.
        k: memories given to the reader per question.
        limit: answer only the first ``limit`` questions (samples past them not loaded).
        count_tokens: counts the memory tokens given to the reader (default cl100k).
        progress: called after each answered question.

    Returns:
        One :class:`Answered` per question, in the data's order.
    """
    count = count_tokens or TiktokenCounter()
    answered: list[Answered] = []
    for sample in samples:
        if limit is not None and len(answered) >= limit:
            break
        loaded = load_conversation(store, sample)
        for question in scored_questions(sample, set(loaded.dia_ids.values())):
            if limit is not None and len(answered) >= limit:
                break
            done = answer_one(store, sample, loaded, question, (reader, judge), k, count)
            answered.append(done)
            if progress is not None:
                progress(done)
    return answered


def summarise(answered: Sequence[Answered]) -> dict[str, Summary]:
    """Figures per category ("1" to "4", those present) and "overall"."""
    groups: dict[str, list[Answered]] = defaultdict(list)
    for item in answered:
        groups[str(item.category)].append(item)
    ordered = {key: groups[key] for key in sorted(groups)}
    ordered["overall"] = list(answered)
    return {key: _summary(items) for key, items in ordered.items() if items}


def _summary(items: Sequence[Answered]) -> Summary:
    judged = [item.judged for item in items if item.judged is not None]
    return Summary(
        questions=len(items),
        f1=_mean([item.f1 for item in items]),
        judge_accuracy=_mean([float(j == "CORRECT") for j in judged]) if judged else None,
        judge_invalid=sum(j == INVALID for j in judged),
        memory_tokens=_mean([float(item.memory_tokens) for item in items]),
        latency_ms=_mean([item.latency_ms for item in items]),
    )


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def format_table(summaries: dict[str, Summary]) -> str:
    """The per-category and overall figures as a text table."""
    lines = [
        f"{'category':<16} {'questions':>9} {'F1':>6} {'judge':>6} {'invalid':>7} "
        f"{'mem tokens':>10} {'latency ms':>10}"
    ]
    for key, figures in summaries.items():
        name = f"{key} {CATEGORIES[int(key)]}" if key.isdigit() else key
        judge = "-" if figures.judge_accuracy is None else f"{figures.judge_accuracy:.3f}"
        invalid = "-" if figures.judge_accuracy is None else str(figures.judge_invalid)
        lines.append(
            f"{name:<16} {figures.questions:>9} {figures.f1:>6.3f} {judge:>6} {invalid:>7} "
            f"{figures.memory_tokens:>10.0f} {figures.latency_ms:>10.0f}"
        )
    return "\n".join(lines)


def run_answer_bench(
    data: Path, *, top_k: int, limit: int | None, judge: bool, json_path: Path | None
) -> int:
    """``python -m bench.locomo --answer``: run, print the report; the exit status.

    Without ``OPENAI_API_KEY`` prints :data:`NO_ENDPOINT` and returns 2 before loading
    anything; an endpoint that refuses or cannot be reached is also one line and 2.
    """
    if not openai_key_set():
        print(NO_ENDPOINT, file=sys.stderr)
        return 2
    if top_k < 1 or (limit is not None and limit < 1):
        print("--top-k and --limit take a number of at least 1", file=sys.stderr)
        return 2
    try:
        reader, judge_model = models_from_env(judge)
    except Exception as exc:  # pydantic validation of the client's settings
        print(f"the chat model cannot be set up: {one_line(exc)}", file=sys.stderr)
        return 2
    try:
        result = _measure(data, reader, judge_model, top_k=top_k, limit=limit)
    except ModelCallError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    print(_header(result, reader, judge_model, top_k))
    print(format_table(summarise(result.answered)))
    if json_path is not None:
        results = _results_json(result, reader, judge_model, top_k)
        json_path.write_text(json.dumps(results, indent=1) + "\n")
    return 0


@dataclass(frozen=True)
class _Run:
    data: Path
    answered: list[Answered]
    seconds: float
    load_before: float
    load_after: float


def _measure(
    data: Path, reader: BaseChatModel, judge: BaseChatModel | None, *, top_k: int, limit: int | None
) -> _Run:
    """Answer the questions of ``data`` on a fresh database with the local embedder."""
    from bench.common import bench_database, open_store, read_samples
    from kioku._embeddings import LOCAL_MODEL, EmbedderSpec
    from kioku._local_embeddings import MiniLMEmbeddings

    samples = read_samples(data)
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    embedder = EmbedderSpec(MiniLMEmbeddings(), f"local:{LOCAL_MODEL}", 384)
    with bench_database("kioku_bench_locomo_answer") as url:
        store = open_store(url, embedder)
        try:
            answered = answer_questions(
                store, samples, reader, judge, k=top_k, limit=limit, progress=_progress()
            )
        finally:
            store.close()
    return _Run(data, answered, time.perf_counter() - started, load_before, os.getloadavg()[0])


def _progress(every: int = 50) -> Callable[[Answered], None]:
    """A callback printing a line to stderr every ``every`` answered questions."""
    done = 0

    def report(_: Answered) -> None:
        nonlocal done
        done += 1
        if done % every == 0:
            print(f"answered {done} questions", file=sys.stderr, flush=True)

    return report


def _header(result: _Run, reader: BaseChatModel, judge: BaseChatModel | None, k: int) -> str:
    judge_name = model_name(judge) if judge is not None else "none"
    return (
        f"LoCoMo answer accuracy ({result.data.name}), categories 1-4, "
        f"{len(result.answered)} questions, {result.seconds:.0f} s\n"
        f"reader {model_name(reader)}, judge {judge_name}, endpoint {endpoint_host()}, "
        f"top k {k}, load average {result.load_before:.2f} -> {result.load_after:.2f}"
    )


def _results_json(
    result: _Run, reader: BaseChatModel, judge: BaseChatModel | None, k: int
) -> dict[str, Any]:
    return {
        "data": str(result.data),
        "reader_model": model_name(reader),
        "judge_model": model_name(judge) if judge is not None else None,
        "endpoint_host": endpoint_host(),
        "top_k": k,
        "seconds": round(result.seconds, 1),
        "load_average": [result.load_before, result.load_after],
        "summary": {key: asdict(s) for key, s in summarise(result.answered).items()},
        "answers": [asdict(item) for item in result.answered],
    }
