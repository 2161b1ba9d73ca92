"""Scoring of LoCoMo answers: LoCoMo's token F1 and an LLM judge's label (pure functions).

The F1 follows LoCoMo's own evaluation (``task_eval/evaluation.py`` of
snap-research/locomo), which is what published LoCoMo figures use:

* normalise: drop commas, lower-case, drop ASCII punctuation, drop the words
  "a", "an", "the" and "and", collapse whitespace;
* tokens: the normalised text split on whitespace, each word Porter-stemmed;
* F1 of the tokens' overlap (as multisets), 0 when nothing is shared;
* category 1 (multi-hop) answers list several items: prediction and gold are split on
  commas, and the score is the mean over gold items of the best F1 of any predicted item;
* category 3 (open-domain) golds carry a justification after ";" ("Likely no; she wants
  to be a counselor"): only the part before the first ";" is scored;
* categories 2 and 4: plain F1. Category 5 (adversarial) is not scored here.

:func:`answer_in_context` is the model-free check (issue #38): whether a context holds the
gold answer at all, on the same normalised, stemmed words.

One deviation: LoCoMo stems with NLTK's ``PorterStemmer`` (its extended mode); we use the
original Porter algorithm of ``snowballstemmer`` (already a kioku dependency). The two
differ on a few irregular words ("dying": NLTK "die", Porter "dy"), not on common ones.
"""

from __future__ import annotations

import json
import re
import string
from collections import Counter
from typing import Literal

import snowballstemmer

_STEMMER = snowballstemmer.stemmer("porter")
_DROPPED_WORDS = re.compile(r"\b(a|an|the|and)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)
_JSON_OBJECT = re.compile(r"\{[^{}]*\}")

Label = Literal["CORRECT", "WRONG"]
"""A judge's verdict on one answer."""


def normalize_answer(text: str) -> str:
    """``text`` as LoCoMo compares it.

    Args:
        text: an answer, gold or predicted.

    Returns:
        Lower-case words without punctuation, articles or "and", single-spaced.
    """
    text = text.replace(",", "").lower().translate(_PUNCTUATION)
    return " ".join(_DROPPED_WORDS.sub(" ", text).split())


def answer_tokens(text: str) -> list[str]:
    """The Porter-stemmed words of ``text`` after :func:`normalize_answer`."""
    return [str(_STEMMER.stemWord(word)) for word in normalize_answer(text).split()]


def token_f1(prediction: str, gold: str) -> float:
    """LoCoMo's F1 of the shared tokens of ``prediction`` and ``gold``.

    Args:
        prediction: the generated answer.
        gold: the reference answer.

    Returns:
        The harmonic mean of token precision and recall, 0.0 when no token is shared.
    """
    predicted, expected = answer_tokens(prediction), answer_tokens(gold)
    shared = sum((Counter(predicted) & Counter(expected)).values())
    if shared == 0:
        return 0.0
    precision, recall = shared / len(predicted), shared / len(expected)
    return 2 * precision * recall / (precision + recall)


def multi_answer_f1(prediction: str, gold: str) -> float:
    """LoCoMo's F1 for a list answer: each gold item against its best predicted item.

    Args:
        prediction: the generated answer, items separated by commas.
        gold: the reference answer, items separated by commas.

    Returns:
        The mean over gold items of the best :func:`token_f1` of any predicted item.
    """
    predicted = [part.strip() for part in prediction.split(",")]
    expected = [part.strip() for part in gold.split(",")]
    return sum(max(token_f1(p, g) for p in predicted) for g in expected) / len(expected)


def scored_gold(answer: object, category: int) -> str:
    """The part of a LoCoMo gold ``answer`` the F1 compares against.

    Args:
        answer: the ``answer`` field (a string, sometimes a number such as a year).
        category: the question's category.

    Returns:
        The answer as text; for category 3 only what precedes the first ";".
    """
    text = str(answer)
    return text.split(";")[0].strip() if category == 3 else text


def gold_items(answer: object, category: int) -> list[str]:
    """The parts of a gold ``answer`` to look for: category 1 lists several, comma-separated."""
    gold = scored_gold(answer, category)
    return [part.strip() for part in gold.split(",")] if category == 1 else [gold]


def answer_in_context(context: str, answer: object, category: int) -> float:
    """The share of the gold answer's items that ``context`` holds (no reader model).

    An item is held when its stemmed words (:func:`answer_tokens`) appear in ``context``'s
    stemmed words as one unbroken run: "7 May 2023" is held by "(7 May 2023)", not by
    "May 7". A lower bound of what a reader could answer: an answer the context implies
    ("yesterday" in a session dated the day after) does not count.

    Args:
        context: the text the model would be given.
        answer: the question's gold ``answer`` field.
        category: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop.

    Returns:
        A share between 0.0 and 1.0 (0.0 for an answer with no words).
    """
    words = " " + " ".join(answer_tokens(context)) + " "
    items = [tokens for tokens in map(answer_tokens, gold_items(answer, category)) if tokens]
    if not items:
        return 0.0
    return sum(f" {' '.join(tokens)} " in words for tokens in items) / len(items)


def locomo_f1(prediction: str, answer: object, category: int) -> float:
    """The F1 LoCoMo gives ``prediction`` for a question of ``category`` (1 to 4).

    Args:
        prediction: the generated answer.
        answer: the question's gold ``answer`` field.
        category: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop.

    Returns:
        A score between 0.0 and 1.0.

    Raises:
        ValueError: for a category LoCoMo does not score by F1 (5, adversarial).
    """
    if category not in (1, 2, 3, 4):
        raise ValueError(f"category {category} is not scored by F1")
    gold = scored_gold(answer, category)
    return multi_answer_f1(prediction, gold) if category == 1 else token_f1(prediction, gold)


def judge_label(reply: str) -> Label | None:
    """The label of a judge's reply, or None when the reply does not give one.

    The judge is asked for ``{"label": "CORRECT"}`` or ``{"label": "WRONG"}``; the
    object may be wrapped in a code fence or follow a sentence of reasoning. The last
    JSON object with a ``label`` of either value (any case) counts.

    Args:
        reply: the judge's text.

    Returns:
        "CORRECT", "WRONG", or None for a reply without such an object.
    """
    for candidate in reversed(_JSON_OBJECT.findall(reply)):
        try:
            parsed = json.loads(candidate)
        except ValueError:
            continue
        if not isinstance(parsed, dict):
            continue
        label = parsed.get("label")
        if isinstance(label, str) and label.strip().upper() in ("CORRECT", "WRONG"):
            return "CORRECT" if label.strip().upper() == "CORRECT" else "WRONG"
    return None
