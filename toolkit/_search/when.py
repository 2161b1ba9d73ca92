"""Time phrases in a query ("last week", "in May", "3 days ago") as a time window: pure."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from kioku._search.query import query_words
from kioku._search.terms import STOP_WORDS

_MONTH_NAMES = (
    "january february march april may june july august september october november december"
)
MONTHS = tuple(_MONTH_NAMES.split(" "))
_UNITS = {"day": 1, "week": 7, "month": 30, "year": 365}
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_MONTH = "|".join(MONTHS)
_PATTERNS = (
    ("relative", re.compile(r"\b(today|yesterday)\b", re.IGNORECASE)),
    ("this_last", re.compile(r"\b(this|last|past|previous)\s+(week|month|year)\b", re.I)),
    (
        "ago",
        re.compile(
            r"\b(\d{1,3}|an?|one|two|three|four|five|six)\s+(day|week|month|year)s?\s+ago\b", re.I
        ),
    ),
    (
        "month",
        re.compile(
            rf"\b(in|during|since|of|early|late|mid)[\s-]+({_MONTH})(?:\s+(\d{{4}}))?\b", re.I
        ),
    ),
    ("year", re.compile(r"\b(in|during|since)\s+((?:19|20)\d{2})\b", re.I)),
)


@dataclass(frozen=True)
class Window:
    """From ``since`` (included) to ``until`` (excluded)."""

    since: datetime
    until: datetime

    def holds(self, moment: datetime) -> bool:
        """Whether ``moment`` lies in the window."""
        return self.since <= moment < self.until


def _day(value: date) -> datetime:
    return datetime.combine(value, time(), tzinfo=UTC)


def _month_window(year: int, month: int) -> Window:
    start = date(year, month, 1)
    end = date(year + (month == 12), month % 12 + 1, 1)
    return Window(_day(start), _day(end))


ABOUT_ANYTHING = frozenset(
    {
        "happen",
        "happens",
        "happened",
        "happening",
        "anything",
        "everything",
        "something",
        "new",
        "news",
        "go",
        "goes",
        "going",
        "went",
        "on",
        "up",
        "remember",
        "recall",
        "tell",
        "know",
    }
)
"""Words of a question that ask what happened, whatever it was ("what happened …")."""


@dataclass(frozen=True)
class TimePhrase:
    """A time phrase of a query, the window it names, and the query without it."""

    window: Window
    rest: str
    """The query with the phrase cut out: what it asks about, besides when."""

    @property
    def asks_only_when(self) -> bool:
        """Whether the query asks what happened then, about nothing in particular."""
        return all(word in STOP_WORDS or word in ABOUT_ANYTHING for word in query_words(self.rest))


def window_of(query: str, now: datetime) -> Window | None:
    """The window the first time phrase of ``query`` names, relative to ``now``."""
    phrase = time_phrase(query, now)
    return phrase.window if phrase is not None else None


def time_phrase(query: str, now: datetime) -> TimePhrase | None:
    """The first time phrase of ``query`` whose window is a real span of days, if any.

    A phrase naming a day outside the calendar ("in May 0000", "in December 9999")
    counts as none.
    """
    today = now.astimezone(UTC).date()
    for kind, pattern in _PATTERNS:
        match = pattern.search(query)
        if match is None:
            continue
        try:
            window = _window(kind, match, today)
        except (ValueError, OverflowError):
            return None
        return TimePhrase(window, f"{query[: match.start()]} {query[match.end() :]}")
    return None


def _window(kind: str, match: re.Match[str], today: date) -> Window:
    """The window of a phrase ``match`` of pattern ``kind`` (may raise past the calendar)."""
    if kind == "relative":
        day = today if match.group(1).lower() == "today" else today - timedelta(days=1)
        return Window(_day(day), _day(day + timedelta(days=1)))
    if kind == "this_last":
        return _this_or_last(match.group(1).lower(), match.group(2).lower(), today)
    if kind == "ago":
        amount = match.group(1).lower()
        count = int(amount) if amount.isdigit() else _NUMBERS[amount]
        unit = _UNITS[match.group(2).lower()]
        centre = today - timedelta(days=count * unit)
        slack = timedelta(days=max(1, unit // 2))
        return Window(_day(centre - slack), _day(centre + slack + timedelta(days=1)))
    if kind == "month":
        month = MONTHS.index(match.group(2).lower()) + 1
        year = int(match.group(3)) if match.group(3) else today.year
        if not match.group(3) and month > today.month:
            year -= 1  # the latest such month
        window = _month_window(year, month)
    else:
        year = int(match.group(2))
        window = Window(_day(date(year, 1, 1)), _day(date(year + 1, 1, 1)))
    if match.group(1).lower() == "since":  # from then until now
        return Window(window.since, max(window.until, _day(today + timedelta(days=1))))
    return window


def _this_or_last(which: str, unit: str, today: date) -> Window:
    if unit == "week":
        start = today - timedelta(days=today.weekday())
        span = timedelta(days=7)
        if which != "this":
            start -= span
        return Window(_day(start), _day(start + span))
    if unit == "month":
        year, month = today.year, today.month
        if which != "this":
            year, month = (year - 1, 12) if month == 1 else (year, month - 1)
        return _month_window(year, month)
    year = today.year - (which != "this")
    return Window(_day(date(year, 1, 1)), _day(date(year + 1, 1, 1)))
