"""Words of other European languages the duplicate check reads (pure).

German, Spanish, French, Italian, Portuguese and Russian.

English is :mod:`kioku._memory.reading`'s own; these are read the same way, accents
dropped: negations turn a statement around, numbers are compared as numbers.
"""

from __future__ import annotations

_NEGATION_WORDS = """
    nicht kein keine keinen keinem keiner keines nie niemals nichts
    nunca jamas ningun ninguno ninguna nada tampoco jamais aucun aucune rien
    non mai nessuno niente nao nenhum nenhuma
    не нет ни никогда ничего никто нигде нельзя
"""
NEGATIONS = frozenset(_NEGATION_WORDS.split())
"""Negations, counted when written in lower case: "Nada" and "Nao" are names."""

NUMBERS = {
    word: str(value)
    for value, group in enumerate(
        (
            "",
            "uno eins один одна одно",
            "dos zwei deux два две двух",
            "tres drei trois три трёх",
            "cuatro vier quatre четыре",
            "cinco funf cinq пять",
            "seis sechs шесть",
            "siete sieben семь",
            "ocho acht huit восемь",
            "nueve neun neuf девять",
            "diez zehn десять",
        )
    )
    for word in group.split()
}
"""Spanish, German, French and Russian numbers to ten (accents of Latin letters dropped;
none an English word)."""
