"""Whether two memories say the same thing: pure rules on top of embedding similarity.

Embeddings place "likes tea" next to "dislikes tea" and "Alice likes tea" next to "Bob
likes tea". A new memory repeats an old one only when the two are close in meaning *and*
nothing in their words sets them apart: a different polarity ("no longer", "dislikes"),
different names or numbers, a relative instead of the subject ("Jake's son"), the same
words with roles swapped ("Alice owes Bob" / "Bob owes Alice"), one word
swapped for another ("window seat" / "aisle seat"), or words of meaning added to all of
the other's ("plays guitar" / "plays guitar in a wedding band"). Measured on
``tests/data/duplicate_pairs.jsonl`` by ``python -m bench.duplicates``.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

import snowballstemmer


def _words(text: str) -> list[str]:
    return text.split()


_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?", re.UNICODE)
_NUMBER = re.compile(r"\d(?:[\d,]*\d)?")
_NUMBER_WORDS = {
    word: str(value)
    for value, word in enumerate(
        _words(
            "zero one two three four five six seven eight nine ten eleven twelve thirteen "
            "fourteen fifteen sixteen seventeen eighteen nineteen twenty"
        )
    )
} | {"once": "1", "twice": "2", "thrice": "3"}
_THOUSANDS = re.compile(r"(?<![\d,])(\d[\d,]*)k\b", re.IGNORECASE)
_ON_THE_HOUR = re.compile(r"\b(\d{1,2})[:.]00\b")
_NO_LONGER = re.compile(r"\bno\s+(?:longer|more)\b", re.IGNORECASE)
NEGATIONS = frozenset(
    _words(
        """
    not no never nor none nobody nothing neither without cannot
    dont doesnt didnt isnt arent wasnt werent wont cant couldnt shouldnt wouldnt hasnt
    havent hadnt aint
    dislike dislikes disliked hate hates hated stop stops stopped quit quits avoid avoids
    avoided refuse refuses refused unable lacks nolonger
    """
    )
)
"""Words that turn a statement around ("dislikes tea" against "likes tea")."""
_RELATION_GROUPS = """
son sons | daughter daughters | child children kid kids baby babies | wife | husband |
partner spouse | mother mum mom | father dad | parent parents | brother brothers |
sister sisters | sibling siblings | grandmother grandma gran granny nan |
grandfather grandpa granddad | grandparent grandparents | grandson | granddaughter |
uncle | aunt auntie | cousin |
nephew | niece | girlfriend | boyfriend | fiance fiancee | friend friends |
colleague colleagues coworker coworkers | boss manager | neighbour neighbor |
roommate flatmate housemate
"""
RELATIONS = {
    word: group.split()[0] for group in _RELATION_GROUPS.split("|") for word in group.split()
}
"""Words naming someone related to the subject ("Jake's son"), each to its group's name:
a memory about the subject's son is about a different person."""
ADDED_WORDS = 2
"""Words of meaning one text adds to all of the other's that make it a new fact (or as
many as the two share, when that is fewer: "after" / "after, async")."""
_STEMMER = snowballstemmer.stemmer("english")
_STOP = frozenset(
    _words(
        """
    a an the is are was were be been am of in on at to for and or with by from as it its
    his her their my our your this that these those has have had do does did s
    """
    )
)
_NOT_NAMES = frozenset(
    _words(
        """
    i the a an my our your his her their its this that these those he she they we it
    user users assistant bot
    """
    )
)


@dataclass(frozen=True)
class Reading:
    """What the rules compare in one memory's text."""

    tokens: tuple[str, ...]
    """Lower-cased words in order, apostrophes dropped."""
    words: frozenset[str]
    """The same, as a set."""
    content: frozenset[str]
    """Stems of the words that carry meaning (no function words)."""
    relations: frozenset[str]
    """Words of :data:`RELATIONS` present."""
    names: frozenset[str]
    """Lower-cased capitalised words (people, places, products)."""
    numbers: frozenset[str]
    negated: bool
    """An odd number of negations."""


def read(text: str) -> Reading:
    """The words, names, numbers and polarity of ``text``."""
    text = unicodedata.normalize("NFKD", text)
    text = "".join(ch for ch in text if not unicodedata.combining(ch))
    text = _NO_LONGER.sub(" nolonger ", text)
    tokens = _WORD.findall(text)
    lowered = tuple(token.lower().replace("'", "") for token in tokens)
    words = frozenset(lowered)
    names = frozenset(
        token.lower()
        for token in tokens
        if token[0].isupper() and not token.isupper() and token.lower() not in _NOT_NAMES
    )
    negations = sum(1 for token in tokens if token.lower().replace("'", "") in NEGATIONS)
    on_the_hour = _ON_THE_HOUR.sub(r"\1", text)  # "3:00" is "3"
    numbers = {m.replace(",", "").lstrip("0") or "0" for m in _NUMBER.findall(on_the_hour)}
    numbers |= {_NUMBER_WORDS[word] for word in words if word in _NUMBER_WORDS}
    numbers |= {m.group(1).replace(",", "") + "000" for m in _THOUSANDS.finditer(text)}
    return Reading(
        tokens=lowered,
        words=words,
        content=frozenset(_STEMMER.stemWord(word) for word in lowered if word not in _STOP),
        relations=frozenset(
            RELATIONS[word] for word in (_owner(w) for w in words) if word in RELATIONS
        ),
        names=frozenset(name.removesuffix("'s") for name in names),
        numbers=frozenset(numbers),
        negated=negations % 2 == 1,
    )


def conflict(first: str, second: str) -> str | None:
    """Why two similar texts still say different things, or ``None`` when nothing does."""
    a, b = read(first), read(second)
    if a.negated != b.negated or _negated_word(a.words, b.words) or _negated_word(b.words, a.words):
        return "polarity"
    if a.numbers and b.numbers and a.numbers != b.numbers:
        return "numbers"
    only_a = {name for name in a.names if name not in b.words and f"{name}s" not in b.words}
    only_b = {name for name in b.names if name not in a.words and f"{name}s" not in a.words}
    if only_a and only_b:
        return "names"
    if a.relations != b.relations:
        return "relations"
    if _two_words_swapped(a.tokens, b.tokens):
        return "roles"  # "Alice owes Bob" / "Bob owes Alice"
    if _one_word_swapped(a.tokens, b.tokens):
        return "value"
    added, dropped = len(b.content - a.content), len(a.content - b.content)
    shared = len(a.content & b.content)
    if min(added, dropped) == 0 and max(added, dropped) >= min(ADDED_WORDS, shared):
        return "more"
    return None


def _two_words_swapped(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """The same words in the same places but two, which trade places ("Alice owes Bob")."""
    if len(a) != len(b):
        return False
    changed = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
    return len(changed) == 2 and a[changed[0]] == b[changed[1]] and a[changed[1]] == b[changed[0]]


_NEGATING_PREFIXES = ("un", "dis", "non", "in", "im", "ir", "il")


def _negated_word(first: frozenset[str], second: frozenset[str]) -> bool:
    """A word of ``first`` is a word of ``second`` with a negating prefix ("unemployed")."""
    return any(
        word[len(prefix) :] in second
        for word in first
        for prefix in _NEGATING_PREFIXES
        if word.startswith(prefix) and len(word) - len(prefix) >= 4
    )


def _owner(word: str) -> str:
    """``wifes`` (from "wife's") as ``wife``, for the words of :data:`RELATIONS`."""
    return word[:-1] if word.endswith("s") and word[:-1] in RELATIONS else word


def _one_word_swapped(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """The same words in the same order but one, replaced by a different word."""
    if len(a) != len(b):
        return False
    changed = [(x, y) for x, y in zip(a, b, strict=True) if x != y]
    if len(changed) != 1:
        return False
    old, new = changed[0]
    if any(ch.isdigit() for ch in old + new):
        return False  # numbers are compared as numbers
    if old.startswith(new) or new.startswith(old):
        return False  # "physio" and "physiotherapy"
    return _canonical(old) != _canonical(new)


def _canonical(word: str) -> str:
    return RELATIONS.get(word) or str(_STEMMER.stemWord(word))


def same_meaning(first: str, second: str, similarity: float, threshold: float) -> bool:
    """Whether ``second`` repeats ``first``: similar enough and no :func:`conflict`."""
    return similarity >= threshold and conflict(first, second) is None
