"""Time phrases in a query ("last week", "in May", "3 days ago") as a time window: pure."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from functools import lru_cache

from kioku._search.query import query_words
from kioku._search.terms import STOP_WORDS

_MONTH_NAMES = (
    "january february march april may june july august september october november december"
)
MONTHS = tuple(_MONTH_NAMES.split(" "))
_UNITS = {"day": 1, "week": 7, "month": 30, "year": 365}
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "a couple of": 2,
    "a couple": 2,
    "couple of": 2,
    "a few": 3,
    "few": 3,
}
_AMOUNT = "|".join(sorted((re.escape(n) for n in _NUMBERS), key=len, reverse=True))
_AMOUNT = rf"(?P<amount>\d{{1,3}}|{_AMOUNT})"
_UNIT = r"(?P<unit>day|week|month|year)s?"
_MONTH = "|".join(MONTHS)
_SINCE = r"(?:(?P<since>since)\s+)?"
_DAY_OF_MONTH = r"(?P<dom>[0-3]?\d)(?P<ordinal>st|nd|rd|th)?"
_COUNTED = (
    r"(?:words?|characters?|chars|tokens?|pages?|lines?|items?|times|people|users?|points?|"
    r"steps?|seconds?|minutes?|hours?|bytes|rows?|memories|messages?|dollars|euros|yen)\b"
)
"""Nouns a number counts: "in 2000 words" is an amount, not a year."""
_FLAGS = re.IGNORECASE | re.ASCII  # "ſix" is not "six": case folding stays in ASCII
_PATTERNS = (
    (
        "relative",
        re.compile(
            rf"\b{_SINCE}(?P<day>(?:the\s+)?day\s+before\s+yesterday|(?:the\s+)?day\s+after\s+"
            r"tomorrow|today|yesterday|tomorrow|tonight|last\s+night|this\s+(?:morning|"
            r"afternoon|evening))\b",
            _FLAGS,
        ),
    ),
    ("iso_day", re.compile(rf"\b{_SINCE}(?P<iso>\d{{4}}-\d{{2}}-\d{{2}})\b", _FLAGS)),
    (
        "month_day",
        re.compile(
            rf"\b{_SINCE}(?P<on>on\s+)?(?P<month>{_MONTH})\s+{_DAY_OF_MONTH}"
            r"(?:,?\s+(?P<year>\d{4}))?\b(?!\s*(?:(?:am|pm)\b|:))",
            _FLAGS,
        ),
    ),
    (
        "day_month",
        re.compile(
            rf"\b{_SINCE}(?:on\s+)?(?:the\s+)?{_DAY_OF_MONTH}\s+(?:of\s+)?(?P<month>{_MONTH})"
            r"(?:,?\s+(?P<year>\d{4}))?\b",
            _FLAGS,
        ),
    ),
    (
        "rolling",  # up to today: "the past week", "in the last 10 days"
        re.compile(
            rf"\b{_SINCE}(?:in|during|over|within|for)?\s*(?:the\s+)?"
            rf"(?:(?:last|past|previous)\s+{_AMOUNT}|past)\s+{_UNIT}\b",
            _FLAGS,
        ),
    ),
    ("weekend", re.compile(rf"\b{_SINCE}(?P<which>this|last|next|past)\s+weekend\b", _FLAGS)),
    (
        "this_last",  # calendar periods: "last week" is the week before this one
        re.compile(
            rf"\b{_SINCE}(?P<which>this|last|previous|next|coming)\s+(?P<unit>week|month|year)\b",
            _FLAGS,
        ),
    ),
    ("ago", re.compile(rf"\b{_SINCE}{_AMOUNT}\s+{_UNIT}\s+(?P<way>ago|from\s+now)\b", _FLAGS)),
    ("ago", re.compile(rf"\bin\s+{_AMOUNT}\s+{_UNIT}(?P<way>)\b", _FLAGS)),
    (
        "month",
        re.compile(
            rf"\b(?:(?P<since>since)|in|during|early|late|mid)[\s-]+(?P<month>{_MONTH})"
            r"(?:\s+(?P<year>\d{4}))?\b",
            _FLAGS,
        ),
    ),
    # "for June" or "by May" may name a person ("anything new for June?"), but not in a
    # question that looks ahead ("what is planned for May?").
    (
        "month_ahead",
        re.compile(rf"\b(?:for|by|until|till)\s+(?P<month>{_MONTH})\b(?!\s+\d)", _FLAGS),
    ),
    # "of June" alone may be a name ("the phone number of June"): with a year.
    ("month", re.compile(rf"\b(?P<month>{_MONTH})\s+(?P<year>\d{{4}})\b", _FLAGS)),
    (
        "year",
        re.compile(
            r"\b(?:(?P<since>since)|in|during)\s+(?P<year>(?:19|20)\d{2})\b"
            rf"(?!\s+{_COUNTED})",  # "in 2000 words" counts words
            _FLAGS,
        ),
    ),
)
"""Time phrases, first match wins; a leading "since" runs the window until now."""

_TIME_WORD = re.compile(
    rf"\d|\b(?:{_MONTH}|today|yesterday|tomorrow|tonight|night|morning|afternoon|evening|"
    r"days?|weeks?|weekend|months?|years?)\b",
    _FLAGS,
)
"""A word every phrase of :data:`_PATTERNS` holds: without one, there is none to look for."""

_LATER = re.compile(
    r"\b(?:will|'ll|going\s+to|gonna|plan|plans|planned|planning|upcoming|coming|"
    r"scheduled|happening|expected|due|next)\b",
    _FLAGS,
)
"""Words that place a question in the future: "in December" then means the coming one."""
_EARLIER = re.compile(r"\b(?:was|were|did|had|happened|went|ago|last)\b", _FLAGS)
"""Words that place it in the past, whatever else it says ("what was happening …")."""


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
        "update",
        "updates",
        "updated",
        "miss",
        "missed",
        "summary",
        "summarise",
        "summarize",
        "summarised",
        "summarized",
        "recap",
        "event",
        "events",
        "plan",
        "plans",
        "planned",
        "everyone",
        "everybody",
        "anyone",
        "anybody",
        "us",
        "interesting",
        "change",
        "changes",
        "changed",
        "occur",
        "occurred",
        "say",
        "said",
        "talk",
        "talked",
        "discuss",
        "discussed",
        "mention",
        "mentioned",
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


def narrowing(
    phrase: TimePhrase | None, since: datetime | None, until: datetime | None
) -> Window | None:
    """The window a query about nothing but a time ("what happened last week?") narrows to.

    None when the caller gave ``since`` or ``until`` itself.
    """
    if phrase is None or not phrase.asks_only_when or since is not None or until is not None:
        return None
    return phrase.window


def window_of(query: str, now: datetime) -> Window | None:
    """The window the first time phrase of ``query`` names, relative to ``now``."""
    phrase = time_phrase(query, now)
    return phrase.window if phrase is not None else None


def time_phrase(query: str, now: datetime) -> TimePhrase | None:
    """The first time phrase of ``query`` whose window is a real span of days, if any.

    A phrase naming a day outside the calendar ("in May 0000", "in December 9999")
    counts as none.
    """
    if _TIME_WORD.search(query) is None:  # most queries: no phrase to look for
        return None
    return _time_phrase(query, now.astimezone(UTC).date())


@lru_cache(maxsize=256)
def _time_phrase(query: str, today: date) -> TimePhrase | None:
    """:func:`time_phrase` on ``today`` (cached: a turn's rankings read the same query)."""
    for kind, pattern in _PATTERNS:
        match = pattern.search(query)
        if match is None:
            continue
        parts = match.groupdict()
        if kind == "month_day" and _may_be_the_verb(
            parts, first=not query[: match.start()].strip()
        ):
            continue  # "we may 2 …": the verb, not the month
        if kind == "month_ahead" and not _looks_ahead(query, since=False):
            continue
        try:
            window = _window(kind, parts, today, query)
        except (ValueError, OverflowError):
            continue
        if parts.get("since"):  # from then until now
            window = Window(window.since, max(window.until, _day(today + timedelta(days=1))))
        return TimePhrase(window, f"{query[: match.start()]} {query[match.end() :]}")
    return None


def _may_be_the_verb(parts: dict[str, str | None], *, first: bool) -> bool:
    """Whether "may 2" may be the verb and a number ("we may 2 …", "May 2 of us come?").

    Only without a year, "on" or "2nd", and when written in lower case or opening the
    query; "… on May 2" or "… before May 2" is the month.
    """
    month = parts.get("month") or ""
    cued = any(parts.get(key) for key in ("year", "on", "ordinal", "since"))
    return month.lower() == "may" and not cued and (month == "may" or first)


def _window(kind: str, parts: dict[str, str | None], today: date, query: str) -> Window:
    """The window a phrase of pattern ``kind`` names (may raise past the calendar)."""

    def part(name: str) -> str:
        return " ".join((parts.get(name) or "").lower().split())

    if kind == "relative":
        return _relative(part("day"), today)
    if kind == "iso_day":
        return _around(date.fromisoformat(part("iso")))
    if kind in ("month_day", "day_month"):
        month, day = MONTHS.index(part("month")) + 1, int(part("dom"))
        ahead = _looks_ahead(query, since=bool(part("since")))
        year = int(part("year")) if part("year") else _year_of((month, day), today, ahead)
        return _around(date(year, month, day))
    if kind == "rolling":
        span = _amount(part("amount") or "1") * _UNITS[part("unit")]
        return Window(_day(today - timedelta(days=span)), _day(today + timedelta(days=1)))
    if kind == "weekend":
        return _weekend(part("which"), today)
    if kind == "this_last":
        return _this_or_last(part("which"), part("unit"), today)
    if kind == "ago":
        count, unit = _amount(part("amount")), _UNITS[part("unit")]
        later = part("way") != "ago"
        centre = today + timedelta(days=count * unit) * (1 if later else -1)
        slack = timedelta(days=max(1, unit // 2))
        return Window(_day(centre - slack), _day(centre + slack + timedelta(days=1)))
    if kind in ("month", "month_ahead"):
        month = MONTHS.index(part("month")) + 1
        ahead = _looks_ahead(query, since=bool(part("since")))
        year = int(part("year")) if part("year") else _year_of((month, 0), today, ahead)
        return _month_window(year, month)
    year = int(part("year"))
    return Window(_day(date(year, 1, 1)), _day(date(year + 1, 1, 1)))


def _amount(amount: str) -> int:
    if amount.isdigit():
        return int(amount)
    return _NUMBERS[" ".join(amount.lower().split())]


def _looks_ahead(query: str, *, since: bool) -> bool:
    """Whether the question asks about what is to come ("what is planned for May?")."""
    return not since and bool(_LATER.search(query)) and not _EARLIER.search(query)


def _year_of(month_day: tuple[int, int], today: date, ahead: bool) -> int:
    """The year of a month (day 0) or day named without one.

    The latest one up to today, or, for a question that looks ahead, the next one from
    today on ("in January" asked in November: the coming January).
    """
    now = (today.month, today.day if month_day[1] else 0)
    if ahead:
        return today.year if month_day >= now else today.year + 1
    return today.year if month_day <= now else today.year - 1


def _around(day: date) -> Window:
    """``day``, a day either side: a day said in a time zone may be another in UTC."""
    return Window(_day(day - timedelta(days=1)), _day(day + timedelta(days=2)))


def _relative(word: str, today: date) -> Window:
    if word == "last night":
        return Window(_day(today - timedelta(days=1)), _day(today + timedelta(days=1)))
    offsets = {"yesterday": -1, "tomorrow": 1}
    if word.endswith("before yesterday"):
        offset = -2
    elif word.endswith("after tomorrow"):
        offset = 2
    else:
        offset = offsets.get(word, 0)  # today, tonight, this morning …
    day = today + timedelta(days=offset)
    return Window(_day(day), _day(day + timedelta(days=1)))


def _weekend(which: str, today: date) -> Window:
    saturday = today + timedelta(days=5 - today.weekday())  # this week's (Monday first)
    if which in ("last", "past"):
        saturday -= timedelta(days=7)
    elif which == "next":
        saturday += timedelta(days=7)
    return Window(_day(saturday), _day(saturday + timedelta(days=2)))


def _this_or_last(which: str, unit: str, today: date) -> Window:
    step = {"this": 0, "next": 1, "coming": 1}.get(which, -1)
    if unit == "week":
        start = today - timedelta(days=today.weekday()) + timedelta(days=7 * step)
        return Window(_day(start), _day(start + timedelta(days=7)))
    if unit == "month":
        index = today.year * 12 + today.month - 1 + step
        return _month_window(index // 12, index % 12 + 1)
    year = today.year + step
    return Window(_day(date(year, 1, 1)), _day(date(year + 1, 1, 1)))
