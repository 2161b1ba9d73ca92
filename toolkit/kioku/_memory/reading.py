"""How a memory reads, word by word: what :mod:`kioku._memory.sameness` compares.

The normalised words, names, numbers and polarity of a memory: numbers, times, weekdays
and months are written one way ("2pm" is "14:00", "$85k" is "$85,000"), hedges and stress
are dropped, British spellings become American ones, and what changes a fact's polarity
("no longer", "used to", "dislikes") is noted.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from kioku._memory import cjk, european
from kioku._memory.text import APOSTROPHES
from kioku._search.when import MONTHS
from kioku._spaceless import is_grammar, word_parts
from kioku._stemming import stem


def words(text: str) -> list[str]:
    return text.split()


WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?", re.UNICODE)
_NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+(?!\d)|\d+")
"""A number, with thousands grouped by commas ("1,450") or not; "1,5" is two numbers."""
NUMBER_WORDS = {
    word: str(value)
    for value, word in enumerate(
        words(
            "zero one two three four five six seven eight nine ten eleven twelve thirteen "
            "fourteen fifteen sixteen seventeen eighteen nineteen twenty"
        )
    )
} | {"once": "1", "twice": "2", "thrice": "3", "pair": "2", "dozen": "12", "decade": "10"}
NUMBER_WORDS |= {"duo": "2", "trio": "3", "quartet": "4", "quintet": "5"}
NUMBER_WORDS |= european.NUMBERS
NUMBER_WORDS |= {"midnight": "0", "noon": "12", "midday": "12"}  # "12 AM" is "0"
NUMBER_WORDS |= {
    word: str(value)
    for value, word in enumerate(
        words(
            "zeroth first second third fourth fifth sixth seventh eighth ninth tenth eleventh "
            "twelfth thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth "
            "nineteenth twentieth"
        )
    )
    if value
}
_THOUSANDS = re.compile(r"(?<![\d,])(\d[\d,]*)k\b", re.IGNORECASE)
_SCALES = {"hundred": 100, "thousand": 1000, "million": 1_000_000}
_SCALED = re.compile(
    r"\b(\d+|{})\s+({})\b".format("|".join(NUMBER_WORDS), "|".join(_SCALES)), re.IGNORECASE
)
_ON_THE_HOUR = re.compile(r"\b(\d{1,2})[:.]00\b")
_NO_LONGER = re.compile(
    r"\b(?:no\s+(?:longer|more)|g[ai]ve[ns]?\s+up|former(?:ly)?|los[te]s?\s+interest|"
    r"mov(?:ed|es|ing)\s+(?:out|away)|(?:broke|break|breaks|split|splits)\s+up|"
    r"step(?:ped|s)?\s+down|resign(?:ed|s)?|(?:got|gets|was|been)\s+(?:fired|cut|laid\s+off|"
    r"kicked\s+out|dropped)|dropped\s+out|laid\s+off|"
    r"left\s+(?:(?:his|her|their|my|the|a)\s+)?(?:job|team|company|band|club|group|server))\b",
    re.IGNORECASE,
)
_CHANGES = frozenset(words("nolonger stop stops stopped quit quits"))
"""Words saying a habit ended, which "used to" only repeats."""
_USED_TO = re.compile(r"\bused\s+to\b", re.IGNORECASE)
_PASSED_AWAY = re.compile(r"\bpass(?:ed|es)?\s+away\b", re.IGNORECASE)
_HEDGES = re.compile(
    r"\b(?:(?:I|we)\s+(?:think|believe|guess|reckon|suppose)|as\s+far\s+as\s+(?:I|we)\s+know|"
    r"if\s+(?:I|we)\s+(?:recall|remember)\s+(?:correctly|right)|it\s+seems|"
    r"right\s+now|at\s+the\s+moment|these\s+days|for\s+now|at\s+present|as\s+of\s+now|"
    r"just\s+so\s+you\s+know|for\s+the\s+record|by\s+the\s+way|fyi)\b",
    re.IGNORECASE,
)
"""Phrases that hedge or date a statement without adding a fact ("Ali works at Google, as far
as I know")."""
_CLOCK = re.compile(r"\b(\d{1,2})(?:[:.](\d{2}))?\s*([ap])\.?m\b\.?", re.IGNORECASE)
_AGE = re.compile(r"(\d)[\s-]+(?:years?|yrs?)[\s-]+old\b", re.IGNORECASE)
_WEEKDAYS = {
    day: f"day{index}"
    for index, names in enumerate(
        ("monday mondays", "tuesday tuesdays", "wednesday wednesdays", "thursday thursdays")
        + ("friday fridays", "saturday saturdays", "sunday sundays")
    )
    for day in names.split()
}
MONTH_WORDS = {month: f"month{index}" for index, month in enumerate(MONTHS, start=1)}
DESCRIBING = frozenset(words("the a an his her their its our my your"))
"""First words of an aside describing what it follows ("Vienna, the capital of Austria")."""
NEGATIONS = frozenset(
    words(
        """
    not no never nor none nobody nothing neither without cannot
    dont doesnt didnt isnt arent wasnt werent wont cant couldnt shouldnt wouldnt hasnt
    havent hadnt aint
    dislike dislikes disliked hate hates hated stop stops stopped quit quits avoid avoids
    avoided refuse refuses refused unable lacks nolonger usedto
    died dies dead deceased expired afraid terrified scared fear fears feared dread dreads
    dreaded optional ban bans banning forbid forbids prohibit prohibits
    intolerant prohibited forbidden banned teetotal teetotaler teetotaller vegan vegetarian
    sober abstains abstained
    """
    )
)
"""Words that turn a statement around ("dislikes tea" against "likes tea"), or say what
someone does not do ("vegan", "teetotal", "lactose intolerant" against "can't digest
lactose")."""
_NON = re.compile(r"\bnon-(?=[^\W\d_])", re.IGNORECASE)
"""``non-smoker``: one word, so the prefix reads as a negation of ``smoker``."""
_FREE_OF = re.compile(r"(?<=\w)-free\b", re.IGNORECASE)
"""``gluten-free``: without gluten."""
_IN_LAW = re.compile(r"\b(\w+)-in-laws?\b", re.IGNORECASE)
"""``father-in-law``: someone else than the father."""
_RELATION_GROUPS = """
son sons boy boys | daughter daughters girl girls | child children kid kids baby babies |
wife | husband |
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
_PAST = re.compile(
    r"\b(?:last\s+(?:week|weekend|month|year|night|time|summer|winter|spring|fall|autumn|"
    r"season|semester|term|{})(?!\s+of\b)|ago|yesterday|previously|"
    r"letzte[nsm]?\s+(?:woche|jahr|monat|sommer|winter)|gestern|vor\s+\d+\s+(?:jahren|tagen)|"
    r"(?:el\s+)?(?:ano|mes|verano|invierno)\s+pasado|(?:la\s+)?semana\s+pasada|ayer|"
    r"hace\s+\d+\s+(?:anos|dias|meses))\b".format(
        "|".join([*MONTHS, *(day.removesuffix("s") for day in _WEEKDAYS)])
    ),
    re.IGNORECASE,
)
"""Words placing a statement in the past ("last Monday", "two years ago"; German's "letztes
Jahr", Spanish "el año pasado"), not a recurring "last Friday of the month"."""
ADDED_WORDS = 3
"""Words of meaning one text adds to all of the other's that make it a new fact (or as
many as the two share, when that is fewer: "after" / "after, async")."""
_STOP = frozenset(
    words(
        """
    a an the is are was were be been am of in on at to for and or with by from as it its
    his her their my our your this that these those has have had do does did s
    into onto about
    """
    )
)
FILLERS = frozenset(
    words(
        """
    really very truly absolutely definitely honestly actually quite totally genuinely
    currently presently nowadays apparently reportedly basically generally please kindly
    """
    )
)
"""Words that stress, soften or date a statement without adding a fact: never "more"."""
_NOT_NAMES = frozenset(
    words(
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
    """Numbers, clock times (24-hour), weekdays and months."""
    negated: bool
    """An odd number of negations."""
    past: bool = False
    """Placed in the past by :data:`_PAST`: "had a dentist appointment last Monday"."""
    future: bool = False
    """Placed in the future or planned, in Japanese, Chinese or Korean ("打算", "予定")."""
    aside: frozenset[str] = frozenset()
    """Stems of words in asides that describe what they follow ("Milan, Italy", "Siemens,
    the engineering company"): detail, not a new fact."""
    sequence: tuple[str, ...] = ()
    """:attr:`tokens` without numbers (compared as numbers), in order."""

    def carries(self, token: str) -> bool:
        """Whether ``token`` says what: no grammar, stop word, name or negation."""
        return not (
            is_grammar(token)
            or token in _STOP
            or token in self.names
            or token in NEGATIONS
            or token in european.NEGATIONS
        )


def read(text: str) -> Reading:
    """The words, names, numbers and polarity of ``text``."""
    text = unaccented(text).translate(APOSTROPHES)
    text = _NO_LONGER.sub(" nolonger ", text)
    text = _USED_TO.sub(" usedto ", text)
    text = _PASSED_AWAY.sub(" died ", text)
    text = _HEDGES.sub(" ", text)
    past = _PAST.search(text) is not None or cjk.PAST.search(text) is not None
    future = cjk.FUTURE.search(text) is not None
    text = cjk.NEGATION.sub(" not ", text)
    text = _NON.sub("non", text)
    text = _FREE_OF.sub(" without", text)
    text = _IN_LAW.sub(r"\1inlaw", text)
    text = _AGE.sub(r"\1", text)  # "34 years old" is "34"
    text = _CLOCK.sub(_on_the_clock, text)  # "2pm" is "14", "2:30 p.m." is "14:30"
    text = _THOUSANDS.sub(lambda m: m.group(1).replace(",", "") + "000", text)  # "85k"
    text = _SCALED.sub(_scaled, text)  # "two thousand" is "2000"
    text = cjk.in_digits(text)  # "二十一" is "21", "5万" is "50000"
    tokens = [part for part in word_parts(text, WORD) if part.lower() not in FILLERS]
    lowered = tuple(
        token.lower().replace("'", "") if token[0].isupper() else spelling(token.replace("'", ""))
        for token in tokens
    )
    words = frozenset(lowered)
    names = frozenset(
        token.lower()
        for token in tokens
        if token[0].isupper() and not token.isupper() and token.lower() not in _NOT_NAMES
    )
    negations = sum(
        1
        for word in lowered
        if word in NEGATIONS or (word in european.NEGATIONS and word not in names)
    )
    if words & _CHANGES:
        negations -= lowered.count("usedto")  # "used to …, but stopped": one change
    aside = aside_words(text)
    return Reading(
        tokens=lowered,
        words=words,
        content=frozenset(
            stem(word) for word in lowered if word not in _STOP and not is_grammar(word)
        ),
        relations=frozenset(
            RELATIONS[word] for word in (owner_word(w) for w in words) if word in RELATIONS
        )
        | cjk.relations(text),
        names=frozenset(name.removesuffix("'s") for name in names),
        numbers=_numbers(text, tokens, words),
        negated=negations % 2 == 1,
        past=past,
        future=future,
        aside=frozenset(stem(word) for word in aside if word not in _STOP),
        sequence=tuple(word for word in lowered if not is_number(word)),
    )


def _numbers(text: str, tokens: list[str], words: frozenset[str]) -> frozenset[str]:
    """Numbers, clock times, weekdays and months of ``text`` (read into these words)."""
    on_the_hour = _ON_THE_HOUR.sub(r"\1", text)  # "3:00" is "3"
    numbers = {m.replace(",", "").lstrip("0") or "0" for m in _NUMBER.findall(on_the_hour)}
    numbers |= {NUMBER_WORDS[word] for word in words if word in NUMBER_WORDS}
    numbers |= {_WEEKDAYS[word] for word in words if word in _WEEKDAYS}
    if words & {"weekend", "weekends"}:
        numbers |= {_WEEKDAYS["saturday"], _WEEKDAYS["sunday"]}
    numbers |= {
        MONTH_WORDS[token.lower()]
        for token in tokens
        if token.lower() in MONTH_WORDS and token[0].isupper()
    }
    return frozenset(numbers)


def is_number(word: str) -> bool:
    """A number word or one holding digits ("4th"): compared as numbers, not as words.

    Numerals are digits by then (:func:`kioku._memory.cjk.in_digits`).
    """
    return word in NUMBER_WORDS or any(ch.isdigit() for ch in word)


def unaccented(text: str) -> str:
    """``text`` with the accents of Latin letters dropped ("café" is "cafe").

    Other scripts keep their marks: a Thai vowel sign is part of the word.
    """
    kept: list[str] = []
    latin = False
    for ch in unicodedata.normalize("NFKD", text):
        if not unicodedata.combining(ch):
            latin = ch < "\u0370"
        elif latin:
            continue
        kept.append(ch)
    return unicodedata.normalize("NFC", "".join(kept))


_BRITISH_ENDINGS = (
    (re.compile(r"(?<=\w{3})our(?=(?:s|ite|ites|ed|ing|able|er|ers|ful)?$)"), "or"),
    (re.compile(r"(?<=\w{3})is(?=(?:e|es|ed|ing|ation|ations)$)"), "iz"),
    (re.compile(r"(?<=\w{3})ys(?=(?:e|es|ed|ing)$)"), "yz"),
    (re.compile(r"(?<=\w{3})tre(?=s?$)"), "ter"),
    (re.compile(r"(?<=\w{3}[aeiou])ll(?=(?:ing|ed|er|ers)$)"), "l"),
)
_SPELLINGS = {"grey": "gray", "programme": "program", "programmes": "programs", "mum": "mom"}


def spelling(word: str) -> str:
    """``word`` in American spelling when it is a British variant ("favourite", "organise").

    Applied to both texts alike, so a word it changes that has no variant ("hour") only
    changes on both sides.
    """
    word = _SPELLINGS.get(word, word)
    for pattern, replacement in _BRITISH_ENDINGS:
        word = pattern.sub(replacement, word)
    return word


def _scaled(match: re.Match[str]) -> str:
    count = match.group(1).lower()
    value = int(NUMBER_WORDS.get(count, count))
    return str(value * _SCALES[match.group(2).lower()])


def _on_the_clock(match: re.Match[str]) -> str:
    hour, minutes, half = int(match.group(1)), match.group(2), match.group(3).lower()
    if not 1 <= hour <= 12:
        return match.group(0)
    hour = hour % 12 + (12 if half == "p" else 0)
    return f"{hour}:{minutes}" if minutes and minutes != "00" else str(hour)


ASIDE_WORDS = 6
"""Longest aside, in words."""


def aside_words(text: str) -> list[str]:
    """Lower-cased words of the comma-set asides of ``text`` that describe what they follow.

    An aside names more of a name ("Milan, Italy": capitalised words after a name) or
    describes it ("Vienna, the capital of Austria"); one with a number or a negation says
    something new, as does one after a common noun ("a dog, Rex").
    """
    segments = [WORD.findall(segment) for segment in text.split(",")]
    words: list[str] = []
    for before, segment in zip(segments, segments[1:], strict=False):
        lowered = [token.lower().replace("'", "") for token in segment]
        if not segment or not before or len(segment) > ASIDE_WORDS:
            continue
        if any(ch.isdigit() for ch in "".join(segment)) or NEGATIONS.intersection(lowered):
            continue
        describes = lowered[0] in DESCRIBING
        names_more = before[-1][0].isupper() and all(token[0].isupper() for token in segment)
        if describes or names_more:
            words += lowered
    return words


def owner_word(word: str) -> str:
    """``wifes`` (from "wife's") as ``wife``, for the words of :data:`RELATIONS`."""
    return word[:-1] if word.endswith("s") and word[:-1] in RELATIONS else word
