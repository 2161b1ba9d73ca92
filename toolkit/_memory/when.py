"""When a memory's event happened, in words a model reads at a glance: pure."""

from __future__ import annotations

from datetime import UTC, date, datetime


def in_utc(moment: datetime) -> datetime | None:
    """``moment`` in UTC (a naive one is taken as UTC); ``None`` when UTC has no such time.

    Python accepts offsets up to a day and PostgreSQL only up to 16 hours, so times leave
    Python in UTC: a valid offset never reaches the database as an error. ``None`` for a
    moment within a day of ``datetime.min`` or ``datetime.max`` whose UTC time falls outside
    them.
    """
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except OverflowError:
        return None


def when_label(moment: datetime, now: datetime) -> str:
    """``2025-05-08, 3 weeks ago``: the date (UTC) and how long before ``now``."""
    return label_on(moment, now.astimezone(UTC).date())


def label_on(moment: datetime, today: date) -> str:
    """:func:`when_label` with ``now``'s UTC date already known."""
    day = moment.astimezone(UTC).date()
    return f"{day.isoformat()}, {_ago((today - day).days)}"


def _ago(days: int) -> str:
    if days < 0:
        return "tomorrow" if days == -1 else f"in {_span(-days)}"
    if days == 0:
        return "today"
    if days == 1:
        return "yesterday"
    return f"{_span(days)} ago"


def _span(days: int) -> str:
    for size, unit, up_to in ((1, "day", 13), (7, "week", 62), (30, "month", 729)):
        if days <= up_to:
            count = days // size
            return f"{count} {unit}{'s' if count != 1 else ''}"
    years = days // 365
    return f"{years} year{'s' if years != 1 else ''}"
