"""When a memory's event happened, in words a model reads at a glance: pure."""

from __future__ import annotations

from datetime import UTC, date, datetime

EARLIEST = datetime(1, 1, 2, tzinfo=UTC)
LATEST = datetime(9999, 12, 30, 23, 59, 59, 999999, tzinfo=UTC)
"""The times kioku stores: a day inside Python's years 1 to 9999, so that a stored time
read in any time zone is still a Python datetime."""


def in_utc(moment: datetime) -> datetime | None:
    """``moment`` in UTC (naive means UTC); ``None`` outside :data:`EARLIEST`..:data:`LATEST`.

    Python accepts offsets up to a day and PostgreSQL only up to 16 hours, so times leave
    Python in UTC: a valid offset never reaches the database as an error.
    """
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        moment = moment.astimezone(UTC)
    except OverflowError:
        return None
    return moment if EARLIEST <= moment <= LATEST else None


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
