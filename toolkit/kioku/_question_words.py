"""Words that only make a sentence a question, in languages written with spaces (pure).

The relevance floor counts a text match when the memory holds enough of the query's words
(``kioku._search.engine.MIN_MATCHED_SHARE``), less stop words
(``kioku._search.sql.STOP_WORD_LANGUAGES``). PostgreSQL's stop lists leave out English
"what" and "how", but miss the interrogatives of most other languages ("quantos",
"сколько", "cuál"), and it has no list at all for Vietnamese, Arabic or Indonesian; so
"Quantos anos tem o Tico?" weighed "Tico" as one word of three and a memory about Tico
was not found. The relevance floor's statement counts these words as stop words too
(one rule: a query of nothing but stop and question words is weighed over all of them),
as :data:`kioku._spaceless.QUESTION_PARTS` does for scripts without spaces.

A word that is also a common content word or name in another language a user may write is
not listed: "bao" (Vietnamese "how many" with "nhiêu", and a bun: left out only before
"nhiêu", :data:`QUESTION_PAIRS`), "comment" (French
"how"), "apa" and "yang" (Indonesian "what" and "which", an acronym and a surname), "wen"
(German "whom", a name), "cho" (Vietnamese "for", a surname), "dari" (Indonesian "from",
a language), "cosa" (Italian "what", "thing"), "mana" (Indonesian "where", a word of
games), "sao" (Vietnamese "why", "star").
"""

from __future__ import annotations

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
        *("quoi", "quel", "quelle", "quels", "quelles", "qui", "quand", "où"),
        *("combien", "pourquoi", "lequel", "laquelle", "lesquels", "lesquelles"),
        # Italian.
        *("che", "quale", "quali", "chi", "come", "quanti", "quante", "perché"),
        # German.
        *("was", "welche", "welcher", "welches", "welchen", "welchem", "wer", "wem"),
        *("wessen", "wann", "wo", "woher", "wohin", "wie", "wieviel", "wieviele", "warum"),
        "weshalb",
        # Dutch.
        *("welke", "welk", "wanneer", "waar", "waarom", "hoe", "hoeveel"),
        # Russian.
        *("что", "чем", "какой", "какая", "какое", "какие", "каких", "каким", "кто"),
        *("кого", "кому", "когда", "где", "куда", "откуда", "как", "сколько", "почему"),
        *("зачем", "ли", "чей", "чья", "чьё", "чьи", "кем", "какого", "какому", "каком"),
        *("какую", "какими", "который", "которая", "которое", "которые", "которого"),
        *("которую", "котором"),
        # Vietnamese: what, which, where, how many, how, when, and the question particles;
        # PostgreSQL has no Vietnamese stop list: also I, you, of, at, is, have, already,
        # and, with, plural markers, a, this, that, tense markers.
        *("gì", "nào", "đâu", "mấy", "nhiêu", "thế", "như", "khi", "không", "chưa"),
        *("nhỉ", "vậy", "hả", "à", "ạ", "tôi", "mình", "bạn", "của", "ở", "là", "có"),
        *("rồi", "thì", "mà", "và", "với", "những", "các", "một", "này", "đó", "đã", "sẽ"),
        *("đang", "được"),
        # Arabic: what, who, where, when, how many, whether, why, how, which; nor an Arabic
        # stop list: in, on, to, about, with, he, she.
        *("ما", "ماذا", "من", "أين", "متى", "كم", "هل", "لماذا", "كيف", "أي"),
        *("في", "على", "إلى", "عن", "مع", "هو", "هي"),
        # Turkish: why, where, how, how many (its list has "ne", "mi", "nasıl").
        *("neden", "nerede", "nereye", "nereden", "nasıl", "kaç", "mı", "mü"),
        # Indonesian and Malay (no stop list either: is, in, and, my, your, this, that).
        *("siapa", "kapan", "dimana", "bagaimana", "berapa", "mengapa", "kenapa"),
        *("adalah", "di", "dan", "saya", "kamu", "ini", "itu"),
    }
)
"""Interrogatives, question particles and (where PostgreSQL has no stop list) function
words; lower-case, NFKC, letters only (as a query's words reach the statement)."""


QUESTION_PAIRS = {"bao": "nhiêu"}
"""A word that only asks when the next word follows ("bao nhiêu", how many), and is a
content word elsewhere: left out of the words weighed only then (the second is one of
:data:`QUESTION_WORDS`)."""


def without_paired_heads(words: list[str]) -> list[str]:
    """``words`` less each :data:`QUESTION_PAIRS` head followed by its pair.

    ``words`` are a query's, in order, lower-case (the pair stays: the statement weighs
    the query over it when nothing else is left).
    """
    return [
        word
        for at, word in enumerate(words)
        if word not in QUESTION_PAIRS or QUESTION_PAIRS[word] not in words[at + 1 : at + 2]
    ]
