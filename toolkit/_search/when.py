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
_SINCE = r"(?:(?P<since>since)\s+)?"
_PATTERNS = (
    ("relative", re.compile(rf"\b{_SINCE}(?P<day>today|yesterday)\b", re.I)),
    (
        "this_last",
        re.compile(
            rf"\b{_SINCE}(?P<which>this|last|past|previous)\s+(?P<unit>week|month|year)\b", re.I
        ),
    ),
    (
        "ago",
        re.compile(
            rf"\b{_SINCE}(?P<amount>\d{{1,3}}|an?|one|two|three|four|five|six)\s+"
            r"(?P<unit>day|week|month|year)s?\s+ago\b",
            re.I,
        ),
    ),
    (
        "month",
        re.compile(
            rf"\b(?:(?P<since>since)|in|during|early|late|mid)[\s-]+(?P<month>{_MONTH})"
            r"(?:\s+(?P<year>\d{4}))?\b",
            re.I,
        ),
    ),
    # "of June" alone may be a name ("the phone number of June"): only with a year.
    ("month", re.compile(rf"\bof\s+(?P<month>{_MONTH})\s+(?P<year>\d{{4}})\b", re.I)),
    ("year", re.compile(r"\b(?:(?P<since>since)|in|during)\s+(?P<year>(?:19|20)\d{2})\b", re.I)),
)
"""Time phrases, first match wins; a leading "since" runs the window until now."""


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
        parts = match.groupdict()
        try:
            window = _window(kind, parts, today)
        except (ValueError, OverflowError):
            continue
        if parts.get("since"):  # from then until now
            window = Window(window.since, max(window.until, _day(today + timedelta(days=1))))
        return TimePhrase(window, f"{query[: match.start()]} {query[match.end() :]}")
    return None


def _window(kind: str, parts: dict[str, str | None], today: date) -> Window:
    """The window a phrase of pattern ``kind`` names (may raise past the calendar)."""

    def part(name: str) -> str:
        return (parts.get(name) or "").lower()

    if kind == "relative":
        day = today if part("day") == "today" else today - timedelta(days=1)
        return Window(_day(day), _day(day + timedelta(days=1)))
    if kind == "this_last":
        return _this_or_last(part("which"), part("unit"), today)
    if kind == "ago":
        amount = part("amount")
        count = int(amount) if amount.isdigit() else _NUMBERS[amount]
        unit = _UNITS[part("unit")]
        centre = today - timedelta(days=count * unit)
        slack = timedelta(days=max(1, unit // 2))
        return Window(_day(centre - slack), _day(centre + slack + timedelta(days=1)))
    if kind == "month":
        month = MONTHS.index(part("month")) + 1
        year = int(part("year")) if part("year") else today.year
        if not part("year") and month > today.month:
            year -= 1  # the latest such month
        return _month_window(year, month)
    year = int(part("year"))
    return Window(_day(date(year, 1, 1)), _day(date(year + 1, 1, 1)))


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
