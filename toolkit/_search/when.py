"""Time phrases in a query ("last week", "in May", "3 days ago") as a time window: pure."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

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
            rf"\b(?:in|during|since|of|early|late|mid)[\s-]+({_MONTH})(?:\s+(\d{{4}}))?\b", re.I
        ),
    ),
    ("year", re.compile(r"\b(?:in|during|since)\s+((?:19|20)\d{2})\b", re.I)),
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


def window_of(query: str, now: datetime) -> Window | None:
    """The window the first time phrase of ``query`` names, relative to ``now``."""
    today = now.astimezone(UTC).date()
    for kind, pattern in _PATTERNS:
        match = pattern.search(query)
        if match is None:
            continue
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
            month = MONTHS.index(match.group(1).lower()) + 1
            year = int(match.group(2)) if match.group(2) else today.year
            if not match.group(2) and month > today.month:
                year -= 1  # the latest such month
            return _month_window(year, month)
        year = int(match.group(1))
        return Window(_day(date(year, 1, 1)), _day(date(year + 1, 1, 1)))
    return None


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
