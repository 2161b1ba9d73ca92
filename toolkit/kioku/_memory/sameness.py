"""Whether two memories say the same thing: pure rules on top of embedding similarity.

Embeddings place "likes tea" next to "dislikes tea" and "Alice likes tea" next to "Bob
likes tea". A new memory repeats an old one only when the two are close in meaning *and*
nothing in their words sets them apart: a different polarity ("no longer", "used to",
"dislikes", "passed away"), different names (or a name against "the user"), numbers,
times, weekdays or months ("2pm" is "14:00", "$85k" is "$85,000"), a relative instead of
the subject ("Jake's son"), the same words with roles swapped ("Alice owes Bob" / "Bob
owes Alice", "Priya is Sam's manager"), one word swapped for another ("window seat" /
"aisle seat"), or words of meaning added to all of the other's ("plays guitar" / "plays
guitar in a local wedding band", or a name: "speaks Spanish and Portuguese"; an aside
describing a name, "Vienna, the capital of Austria", adds none). Saying less than the
stored memory (a dropped year or qualifier) repeats it; hedges, stress and British
spellings ("as far as I know", "really", "favourite") change nothing. Measured on the
labelled pairs in ``tests/data/`` by ``python -m bench.duplicates``.
"""

from __future__ import annotations

from kioku._memory.cjk import ENDINGS
from kioku._memory.reading import (
    ADDED_WORDS,
    MONTH_WORDS,
    RELATIONS,
    Reading,
    is_number,
    read,
    words,
)
from kioku._spaceless import is_character, is_grammar, is_hiragana
from kioku._stemming import stem


def conflict(first: str, second: str) -> str | None:
    """Why ``second`` (new) says something ``first`` (stored) does not, else ``None``.

    Not symmetric: a new text saying less than the stored one repeats it.
    """
    return _conflict(read(first), read(second))


def _conflict(a: Reading, b: Reading) -> str | None:
    """:func:`conflict` of two texts already read."""
    if a.negated != b.negated or _negated_word(a.words, b.words) or _negated_word(b.words, a.words):
        return "polarity"
    if a.past != b.past or a.future != b.future:
        return "time"  # "is visiting next weekend" / "visited last weekend"
    if not b.numbers <= a.numbers and not a.numbers | b.numbers <= {"1"}:
        return "numbers"  # "one" on its own is "a": "has one cat" / "has a cat"
    only_a, only_b = _names_only_in(a, b), _names_only_in(b, a)
    if only_a and only_b:
        return "names"
    if only_a and _the_user_only(b, a) or only_b and _the_user_only(a, b):
        return "names"  # "The user likes jazz" / "Maya likes jazz"
    if a.relations != b.relations:
        return "relations"
    if _two_words_swapped(a.tokens, b.tokens) or _names_traded(a, b):
        return "roles"  # "Alice owes Bob" / "Bob owes Alice"
    spans = _differing_spans(a.sequence, b.sequence)
    if spans is not None and _characters_traded(spans):
        return "roles"  # "王明喜欢李华" / "李华喜欢王明"
    if _one_word_swapped(a.tokens, b.tokens) or _span_swapped(a.tokens, b.tokens):
        return "value"
    if spans is not None and _characters_swapped(a, b, spans):
        return "value"  # "犬の名前はポチ" / "犬の名前はクロ"
    added, dropped = len(b.content - a.content - b.aside), len(a.content - b.content - a.aside)
    shared = len(a.content & b.content)
    if dropped == 0 and (added >= min(ADDED_WORDS, shared) or _new_names(only_b, b)):
        return "more"  # a name it adds is a new fact ("speaks Spanish and Portuguese")
    return None


NAME_PREFIX = 5
"""Letters a name must share as a prefix of another to name the same thing ("Postgres" /
"PostgreSQL", "Chris" / "Christopher")."""


def _names_only_in(first: Reading, second: Reading) -> set[str]:
    """Names of ``first`` that ``second`` does not mention."""
    return {
        name
        for name in first.names
        if name not in second.words
        and f"{name}s" not in second.words
        and not any(
            len(shorter) >= NAME_PREFIX and longer.startswith(shorter)
            for other in second.names
            for shorter, longer in (sorted((name, other), key=len),)
        )
    }


def _new_names(names: set[str], reading: Reading) -> bool:
    """Whether some of ``names`` are not just an aside of ``reading`` ("Milan, Italy")."""
    return any(stem(name) not in reading.aside for name in names)


_PRONOUNS = {"his": "their", "her": "their", "he": "they", "she": "they", "him": "them"}


def _names_traded(a: Reading, b: Reading) -> bool:
    """The same sentence with its people in other places ("Priya is Sam's manager")."""
    if "and" in a.words or "and" in b.words:
        return False  # "Tom and Mia" / "Mia and Tom"

    def shape(reading: Reading) -> tuple[list[str], list[str]]:
        skeleton, order = [], []
        for token in reading.tokens:
            name = token if token in reading.names else token.removesuffix("s")
            if name in reading.names:
                skeleton.append("NAME" + token[len(name) :])
                order.append(name)
            else:
                skeleton.append(_PRONOUNS.get(token, token))
        return skeleton, order

    (skeleton_a, order_a), (skeleton_b, order_b) = shape(a), shape(b)
    return (
        skeleton_a == skeleton_b
        and len(set(order_a)) >= 2
        and order_a != order_b
        and sorted(order_a) == sorted(order_b)
    )


def _the_user_only(first: Reading, second: Reading) -> bool:
    """``first`` speaks of the user and ``second`` does not."""
    return "user" in first.words and "user" not in second.words


def _two_words_swapped(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """The same words in the same places but two, which trade places ("Alice owes Bob")."""
    if len(a) != len(b):
        return False
    changed = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
    if len(changed) != 2 or a[changed[0]] != b[changed[1]] or a[changed[1]] != b[changed[0]]:
        return False
    first, second = changed
    if second - first == 2 and a[first + 1] in {"and", "or"}:
        return False  # "cats and dogs" / "dogs and cats"
    swapped = (a[first], a[second])
    day_and_month = any(w.isdigit() for w in swapped) and any(w in MONTH_WORDS for w in swapped)
    return not day_and_month  # "5 May" / "May 5"; "5/6" / "6/5" and "3-1" / "1-3" differ


_NEGATING_PREFIXES = ("un", "dis", "non", "in", "im", "ir", "il")


def _negated_word(first: frozenset[str], second: frozenset[str]) -> bool:
    """A word of ``first`` is a word of ``second`` with a negating prefix ("unemployed")."""
    return any(
        word[len(prefix) :] in second
        for word in first
        for prefix in _NEGATING_PREFIXES
        if word.startswith(prefix) and len(word) - len(prefix) >= 4
    )


def _one_word_swapped(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """The same words in the same order but one, replaced by a different word."""
    if len(a) != len(b):
        return False
    changed = [(x, y) for x, y in zip(a, b, strict=True) if x != y]
    if len(changed) != 1:
        return False
    old, new = changed[0]
    if is_grammar(old) and is_grammar(new):
        return False  # one Japanese particle for another: "猫を" / "猫が"
    old_number, new_number = is_number(old), is_number(new)
    if old_number and new_number:
        return False  # numbers are compared as numbers
    if old_number or new_number:
        return not {old, new} & {"a", "an"}  # "Model 3" / "Model Y"; "1 cat" / "a cat"
    if old.startswith(new) or new.startswith(old):
        return False  # "physio" and "physiotherapy"
    return _canonical(old) != _canonical(new)


SWAPPED_SPAN = 2
"""Words a value may take in :func:`_span_swapped` ("peanuts" / "tree nuts")."""


def _span_swapped(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """The same words but a short last span, replaced by other words of another length.

    "allergic to peanuts" / "allergic to tree nuts": one value for another, no word of it
    kept. Only at the end, where a statement names its value: a span before it is mostly
    the verb, which paraphrases reword ("can't stand" / "really dislikes" cilantro). Spans
    of one word each are :func:`_one_word_swapped`'s.
    """
    if not a or not b or a[-1] == b[-1]:
        return False
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    old, new = a[start:], b[start:]
    if not start or not old or not new or len(old) == len(new):
        return False
    if max(len(old), len(new)) > SWAPPED_SPAN or all(map(is_grammar, (*old, *new))):
        return False  # too long for a value; or Japanese endings ("です" / "だ")
    if any(is_number(word) for word in (*old, *new)):
        return False  # numbers are compared as numbers
    old_words, new_words = {_canonical(w) for w in old}, {_canonical(w) for w in new}
    joined_old, joined_new = "".join(old), "".join(new)
    return not old_words & new_words and joined_old != joined_new  # "ice cream" / "icecream"


Spans = tuple[tuple[tuple[str, ...], tuple[str, ...]], tuple[str, ...]]
"""Two texts' differing spans (old, new) and the words around them both share."""


def _characters_swapped(first: Reading, second: Reading, spans: Spans) -> bool:
    """The same words but one span holding Japanese or Chinese, replaced by other words.

    The words on both sides of it the same and in the same order (some of them saying
    something), none of the span's own kept: one value for another ("京都出身" /
    "神戸出身", "ラーメンが好き" / "うどんが好き", "grew up in 大阪" / "grew up in
    福岡"). Reordered or reworded texts ("大阪で会計士" / "会計士として大阪で") do not
    line up so, and particles and endings alone ("です" / "だ") are grammar, not a value.
    """
    (old, new), kept = spans
    if not any(map(first.carries, kept)):
        return False  # nothing but particles or a name around it: not the same sentence
    at_end = first.sequence[-len(old) :] == old
    old_said, new_said = _said(first, old, at_end), _said(second, new, at_end)
    if not old_said or not new_said:
        return False  # one says less ("として働いています" / "です"), or grammar alone
    if not old_said & new_said:
        return True
    # A short name sharing a character ("田中" / "山田"): neither holds the other.
    short = max(len(old_said), len(new_said)) <= SHORT_VALUE
    return short and not (old_said <= new_said or new_said <= old_said)


def _differing_spans(a: tuple[str, ...], b: tuple[str, ...]) -> Spans | None:
    """``a``'s and ``b``'s spans between their common start and end, and what is around.

    ``None`` unless both spans hold something, some of it Japanese or Chinese.
    """
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    end = 0
    while end < min(len(a), len(b)) - start and a[-1 - end] == b[-1 - end]:
        end += 1
    old, new = a[start : len(a) - end], b[start : len(b) - end]
    if not old or not new or not any(map(is_character, (*old, *new))):
        return None  # spans of other scripts are the word rules' above
    return (old, new), (*a[:start], *a[len(a) - end :])


def _said(reading: Reading, span: tuple[str, ...], at_end: bool) -> set[str]:
    """What a swapped span says: its words of meaning, else its hiragana (うどん).

    Nothing when it is Japanese grammar alone: particles and endings ("です", "を"), or
    hiragana ending the sentence (a verb's ending: "いる" / "います").
    """
    said = set(filter(reading.carries, span))
    if said or at_end or "".join(span) in ENDINGS:
        return said
    word = "".join(filter(is_hiragana, span))  # read by sound, whole: りんご / みかん
    return {word} if word else set()


SHORT_VALUE = 2
"""Characters of meaning a swapped value may hold on each side and still share one."""
_AND = frozenset({"和", "与", "與", "跟", "と", "や", "and"})


def _characters_traded(spans: Spans) -> bool:
    """Two people or things trading places around what joins them.

    "王明喜欢李华" / "李华喜欢王明", "太郎が花子を好き" / "花子が太郎を好き"; not two
    joined by "and" (和, と), nor a word only moved ("毎日東京で" / "東京で毎日").
    """
    (old, new), _ = spans
    if len(old) != len(new) or sorted(old) != sorted(new) or _AND & set(old):
        return False
    for x in range(1, len(old)):
        for y in range(1, len(old) - x):
            left, middle, right = old[:x], old[x : len(old) - y], old[len(old) - y :]
            if (*right, *middle, *left) == new and left != right:
                return not all(map(is_grammar, left)) and not all(map(is_grammar, right))
    return False


_SYNONYMS = {
    word: group.split()[0]
    for group in ("have has had own owns owned", "start starts started begin begins began")
    for word in group.split()
}
"""Verbs that say the same in a one-word swap ("has a dog" / "owns a dog")."""


def _canonical(word: str) -> str:
    return RELATIONS.get(word) or _SYNONYMS.get(word) or stem(word)


SUBSET_MARGIN = 0.12
"""How much less similar a new text may be when it is the stored one with words left out:
it says less ("Hiroshi drives a Honda" after "… a silver 2020 Honda Civic")."""
SUBSET_WORDS = 2
"""Words of meaning a shorter text needs for :data:`SUBSET_MARGIN`."""
_ARTICLES = frozenset(words("a an the"))


def same_meaning(first: str, second: str, similarity: float, threshold: float) -> bool:
    """Whether ``second`` repeats ``first``: similar enough and no :func:`conflict`.

    Similar enough is ``threshold``, or :data:`SUBSET_MARGIN` less for a text that is
    ``first`` with words left out (in the same order, so nobody changes places: "Bob
    recommended Dune" does not shorten "Alice recommended Dune to Bob"). A ``threshold``
    of 1 or more leaves only identical texts as repeats: none is similar enough.
    """
    if threshold >= 1.0 or similarity < threshold - SUBSET_MARGIN:
        return False
    a, b = read(first), read(second)
    if _conflict(a, b) is not None:
        return False
    return similarity >= threshold or (
        len(b.content) >= SUBSET_WORDS and _left_out_of(b.tokens, a.tokens)
    )


def _left_out_of(shorter: tuple[str, ...], longer: tuple[str, ...]) -> bool:
    """Whether ``shorter``'s words (articles aside) appear in ``longer`` in the same order."""
    remaining = iter(word for word in longer if word not in _ARTICLES)
    return all(word in remaining for word in shorter if word not in _ARTICLES)
