"""Words that only make a sentence a question, in languages written with spaces (pure).

The relevance floor counts a text match when the memory holds enough of the query's words
(``kioku._search.engine.MIN_MATCHED_SHARE``). PostgreSQL's stop lists leave out English
"what", "how", "is"; for other languages they miss the interrogatives ("quantos",
"сколько") or there is no list at all (Vietnamese), so "Quantos anos tem o Tico?" held
"Tico" as one word of three and a memory about Tico was not found. These are the
interrogatives and question particles of the languages kioku's users are likely to
write (and, for languages PostgreSQL has no stop list for, their commonest function
words), left out of the words a memory's share is counted over, as
:data:`kioku._spaceless.QUESTION_PARTS` are for scripts without spaces. A query of
nothing but such words keeps them all.

Words that are also common content words in another language are left out of the lists
("dove", Italian "where", is a bird; "ai", Vietnamese "who", is "AI"; "kim", Turkish
"who", is a name; "bao" starts Vietnamese "how many" but is a bun).
"""

from __future__ import annotations

import re
import unicodedata

QUESTION_PHRASES = (
    # Vietnamese: how many, when, where, what (is), why, how.
    *("bao nhiêu", "khi nào", "lúc nào", "ở đâu", "là gì", "tại sao", "vì sao"),
    *("như thế nào", "thế nào", "ra sao"),
    # French "est-ce que", Turkish "ne zaman" (when), Indonesian "di mana" (where).
    *("est-ce que", "est ce que", "ne zaman", "di mana"),
)
"""Questions of more than one word, left out whole."""

QUESTION_WORDS = frozenset(
    {
        # English (PostgreSQL's list has most; the rest for other configurations).
        *("what", "which", "who", "whom", "whose", "when", "where", "why", "how"),
        # Portuguese.
        *("que", "quê", "qual", "quais", "quem", "quando", "onde", "aonde", "como"),
        *("quanto", "quanta", "quantos", "quantas", "porque", "porquê"),
        # Spanish.
        *("qué", "cuál", "cuáles", "quién", "quiénes", "cuándo", "dónde", "adónde"),
        *("cómo", "cuánto", "cuánta", "cuántos", "cuántas"),
        # French.
        *("quoi", "quel", "quelle", "quels", "quelles", "qui", "quand", "où", "comment"),
        *("combien", "pourquoi", "lequel", "laquelle", "lesquels", "lesquelles"),
        # Italian.
        *("che", "cosa", "quale", "quali", "chi", "come", "quanti", "quante"),
        "perché",
        # German.
        *("was", "welche", "welcher", "welches", "welchen", "welchem", "wer", "wen", "wem"),
        *("wessen", "wann", "wo", "woher", "wohin", "wie", "wieviel", "wieviele", "warum"),
        "weshalb",
        # Dutch.
        *("welke", "welk", "wanneer", "waar", "waarom", "hoe", "hoeveel"),
        # Russian.
        *("что", "чем", "какой", "какая", "какое", "какие", "каких", "каким", "кто"),
        *("кого", "кому", "когда", "где", "куда", "откуда", "как", "сколько", "почему"),
        *("зачем", "ли", "чей", "чья", "чьё", "чьи"),
        # Vietnamese: what, which, where, why, how many (few), and the question particles;
        # PostgreSQL has no Vietnamese stop list: also I, you, of, at, is, have, already,
        # and, with, for, plural markers, a, this, that, tense markers.
        *("gì", "nào", "đâu", "mấy", "không", "chưa", "nhỉ", "vậy", "hả", "à", "ạ"),
        *("tôi", "mình", "bạn", "của", "ở", "là", "có", "rồi", "thì", "mà", "và", "với"),
        *("cho", "những", "các", "một", "này", "đó", "đã", "sẽ", "đang", "được"),
        # Arabic: what, who, where, when, how many, whether, why, how, which; nor an Arabic
        # stop list: in, on, to, about, with, he, she.
        *("ما", "ماذا", "من", "أين", "متى", "كم", "هل", "لماذا", "كيف", "أي"),
        *("في", "على", "إلى", "عن", "مع", "هو", "هي"),
        # Turkish: what, why, where, how, how many, and the question particles.
        *("ne", "neden", "nerede", "nereye", "nereden", "nasıl", "kaç"),
        *("mi", "mı", "mu", "mü"),
        # Indonesian and Malay (no stop list either: is, of, in, and, my, your, this).
        *("apa", "siapa", "kapan", "dimana", "bagaimana", "berapa", "mengapa", "kenapa"),
        *("adalah", "dari", "di", "dan", "saya", "kamu", "ini", "itu", "yang"),
    }
)
"""Interrogatives, question particles and (where PostgreSQL has no stop list) function
words; lower-case, NFKC (as queries are read)."""

_PHRASE = re.compile(
    r"(?<!\w)(?:" + "|".join(re.escape(p) for p in QUESTION_PHRASES) + r")(?!\w)"
)


def without_question_words(text: str, words: list[str]) -> list[str]:
    """``words`` (of ``text``) less the question words, unless nothing else is left.

    ``words`` are ``text``'s words lower-cased; a question phrase of ``text`` removes each
    of its words once.
    """
    phrased: list[str] = []
    for phrase in _PHRASE.findall(unicodedata.normalize("NFKC", text).lower()):
        phrased += re.findall(r"\w+", phrase)
    kept: list[str] = []
    for word in words:
        if word in phrased:
            phrased.remove(word)
        elif word not in QUESTION_WORDS:
            kept.append(word)
    return kept or words
