"""German, Spanish, French, Italian and Portuguese words the duplicate check reads (pure).

English is :mod:`kioku._memory.reading`'s own; these are read the same way, accents
dropped: negations turn a statement around, numbers are compared as numbers.
"""

from __future__ import annotations

_NEGATION_WORDS = """
    nicht kein keine keinen keinem keiner keines nie niemals nichts
    nunca jamas ningun ninguno ninguna nada tampoco jamais aucun aucune rien
    non mai nessuno niente nao nenhum nenhuma
"""
NEGATIONS = frozenset(_NEGATION_WORDS.split())
"""Negations, counted when written in lower case: "Nada" and "Nao" are names."""

NUMBERS = {
    word: str(value)
    for value, group in enumerate(
        (
            "",
            "uno eins",
            "dos zwei deux",
            "tres drei trois",
            "cuatro vier quatre",
            "cinco funf cinq",
            "seis sechs",
            "siete sieben",
            "ocho acht huit",
            "nueve neun neuf",
            "diez zehn",
        )
    )
    for word in group.split()
}
"""Spanish, German and French numbers to ten (accents dropped; none an English word)."""
