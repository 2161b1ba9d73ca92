"""The long-term-memory intent gate (SPEC §9): pure phrase matching, extensible per locale.

When the triggering message explicitly asks the bot to remember something for the long
term, the short-term-memory tool and its hints are withheld for the turn, so the model
reaches for ``create_long_term_memory`` instead.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property

from kioku._memory.text import APOSTROPHES


@dataclass(frozen=True)
class LocalePhrases:
    """Intent phrases of one locale."""

    phrases: tuple[str, ...]
    """Phrases, lower-case; in space-delimited scripts they match on word boundaries."""
    space_delimited: bool = True
    """``False`` for scripts without spaces between words (Japanese, Chinese)."""
    recall_patterns: tuple[str, ...] = ()
    """Regexes (over the normalised text) marking a match as a question about the past."""

    @cached_property
    def _phrase_pattern(self) -> re.Pattern[str]:
        parts = []
        for phrase in sorted(self.phrases, key=len, reverse=True):
            body = r"\s+".join(re.escape(word) for word in phrase.split())
            parts.append(rf"(?<!\w){body}(?!\w)" if self.space_delimited else body)
        return re.compile("|".join(parts))

    @cached_property
    def _recall_pattern(self) -> re.Pattern[str] | None:
        return re.compile("|".join(self.recall_patterns)) if self.recall_patterns else None

    def matches(self, text: str) -> bool:
        """Whether ``text`` (normalised) asks to remember something for the future."""
        for sentence in _sentences(text):
            for match in self._phrase_pattern.finditer(sentence):
                if not self._is_recall(sentence, match):
                    return True
        return False

    def _is_recall(self, sentence: str, match: re.Match[str]) -> bool:
        recall = self._recall_pattern
        if recall is None:
            return False
        window = sentence[max(0, match.start() - 24) : match.end() + 16]
        return recall.search(window) is not None


ENGLISH = LocalePhrases(
    phrases=(
        "remember",
        "memorize",
        "memorise",
        "don't forget",
        "do not forget",
        "dont forget",
        "never forget",
        "note that",
        "note this",
        "make a note",
        "take note",
        "keep in mind",
        "commit to memory",
        "commit this to memory",
        "for future conversations",
        "for future reference",
        "from now on",
    ),
    recall_patterns=(
        # "do you remember …?", "did you forget …", "don't you remember", "you remember when"
        r"\b(?:do|did|does|don't|didn't|dont|didnt)\s+(?:you|u|ya)\s+(?:still\s+)?"
        r"(?:remember|recall|forget)",
        r"\byou\s+(?:still\s+)?remember\b.*\?",
        r"\bremember\s+(?:when|the\s+time|how|what|who|where|that\s+time|last)\b",
        r"\b(?:i|we)\s+(?:still\s+|can't\s+|cannot\s+|don't\s+)?remember\b",
        r"\bremember\s+me\s*\?",
    ),
)
"""English phrases; questions and statements about the past are not intent."""

JAPANESE = LocalePhrases(
    phrases=(
        "覚えておいて",
        "覚えておけ",
        "覚えといて",
        "覚えてて",
        "覚えていて",
        "忘れないで",
        "忘れるな",
        "記憶して",
        "記憶しておいて",
        "メモして",
        "メモしておいて",
        "今後のために",
        "これから先",
    ),
    space_delimited=False,
)
"""Japanese imperative phrases (past questions such as 覚えてる？ are not in the list)."""

DEFAULT_LOCALES: Mapping[str, LocalePhrases] = {"en": ENGLISH, "ja": JAPANESE}

_SENTENCE_END = re.compile(r"(?<=[.!?。！？\n])")


def normalise_message(text: str) -> str:
    """NFKC, lower-case, unified apostrophes, collapsed whitespace."""
    folded = unicodedata.normalize("NFKC", text).translate(APOSTROPHES).lower()
    return " ".join(folded.split())


def _sentences(text: str) -> Iterable[str]:
    return (part for part in _SENTENCE_END.split(text) if part.strip())


@dataclass(frozen=True)
class IntentGate:
    """Detects explicit long-term-memory intent in a message.

    Example:
        ```python
        gate = IntentGate()
        gate.detect("Please remember my birthday")       # True
        gate.detect("Do you remember when we met?")      # False
        custom = IntentGate({"de": LocalePhrases(("merk dir",))})
        ```
    """

    locales: Mapping[str, LocalePhrases] = field(default_factory=lambda: dict(DEFAULT_LOCALES))
    """Phrase sets by locale; every locale is checked."""

    def detect(self, message: str) -> bool:
        """Whether ``message`` explicitly asks for something to be remembered long-term."""
        text = normalise_message(message)
        return bool(text) and any(locale.matches(text) for locale in self.locales.values())


def detect_long_term_memory_intent(message: str, gate: IntentGate | None = None) -> bool:
    """Shortcut for ``(gate or IntentGate()).detect(message)``."""
    return (gate or _DEFAULT_GATE).detect(message)


_DEFAULT_GATE = IntentGate()
