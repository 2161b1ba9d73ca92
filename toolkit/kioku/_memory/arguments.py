"""Parsing of the raw, model-supplied tool arguments: pure, never raises."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from kioku._memory.text import echo, unstorable
from kioku._memory.when import in_utc

MAX_SAFE_INTEGER = 2**53 - 1
MAX_NAME_LENGTH = 256
"""Characters in a person's name (``target_user``)."""
MAX_LISTED_NAMES = 5
"""Unknown argument names a reason lists before ``and N more``."""
_ID_TEXT = re.compile(r"^\s*(?:id\s*[:#]?\s*)?(\d{1,16})\s*$", re.IGNORECASE)

Scope = Literal["server_wide", "target_user"]


class ArgumentError(ValueError):
    """Raised by the parsers below with a reason for the model."""


@dataclass(frozen=True, slots=True)
class CreateArgs:
    """Validated arguments of ``create_long_term_memory``."""

    content: str
    scope: Scope
    target_user: str | None
    event_time: datetime | None = None
    """When what it records happened, if the model says."""


@dataclass(frozen=True, slots=True)
class UpdateArgs:
    """Validated arguments of ``update_long_term_memory``."""

    memory_id: int
    content: str
    target_user: str | None
    event_time: datetime | None = None
    """A corrected time of the memory's event (UTC); ``None`` keeps its time."""


def check_text(field: str, value: str, max_length: int) -> str:
    """``value`` unchanged if it is at most ``max_length`` characters and storable.

    The one rule for strings that are checked rather than sanitised (names, queries,
    metadata): PostgreSQL cannot hold NUL or surrogates, so they are refused here.

    Raises:
        ArgumentError: naming ``field`` and what is wrong (never repeating ``value``).
    """
    if len(value) > max_length:
        raise ArgumentError(f"{field} is {len(value)} characters; the maximum is {max_length}")
    problem = unstorable(value)
    if problem is not None:
        raise ArgumentError(f"{field} contains {problem}; remove it and call again")
    return value


def reject_unknown(
    arguments: Iterable[Any], allowed: Iterable[str], *, what: str = "argument(s)"
) -> None:
    """Refuse names in ``arguments`` outside ``allowed``, echoing a few of them capped.

    Raises:
        ArgumentError: ``unknown {what} …; allowed: …``.
    """
    known = set(allowed)
    extra = sorted(echo(str(name)) for name in arguments if name not in known)
    if not extra:
        return
    listed = ", ".join(extra[:MAX_LISTED_NAMES])
    if len(extra) > MAX_LISTED_NAMES:
        listed += f" and {len(extra) - MAX_LISTED_NAMES} more"
    raise ArgumentError(f"unknown {what} {listed}; allowed: {', '.join(sorted(known))}")


def _optional_name(arguments: Mapping[str, Any], key: str) -> str | None:
    value = arguments.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ArgumentError(f"{key} must be a string (the person's name as shown), or omitted")
    check_text(key, value, MAX_NAME_LENGTH)
    return value if value.strip() else None


def parse_time(value: Any, name: str) -> datetime:
    """An ISO 8601 date or date-time, in UTC (taken as UTC when it names no offset).

    Raises:
        ArgumentError: naming the argument and the form it takes.
    """
    form = f"{name} must be an ISO 8601 date or date-time, e.g. 2025-05-08"
    if not isinstance(value, str) or len(value) > 40:
        raise ArgumentError(form)
    try:
        moment = in_utc(datetime.fromisoformat(value.strip()))
    except ValueError as exc:
        raise ArgumentError(form) from exc
    if moment is None:
        raise ArgumentError(f"{name} must lie between 0001-01-02 and 9999-12-30 (UTC)")
    return moment


def parse_create_args(arguments: Mapping[str, Any]) -> CreateArgs:
    """Validate ``create_long_term_memory`` arguments.

    Raises:
        ArgumentError: with a reason the model can act on.
    """
    reject_unknown(arguments, ("memory_content", "memory_scope", "target_user", "event_time"))
    content = arguments.get("memory_content")
    if not isinstance(content, str):
        raise ArgumentError("memory_content is required and must be a string")
    if not content.strip():
        raise ArgumentError("memory_content is blank; write the fact to remember")
    scope = arguments.get("memory_scope")
    if scope not in ("server_wide", "target_user"):
        raise ArgumentError("memory_scope must be 'server_wide' or 'target_user'")
    target = _optional_name(arguments, "target_user")
    if scope == "target_user" and target is None:
        raise ArgumentError(
            "target_user (the person's name) is required when memory_scope is 'target_user'"
        )
    event_time = arguments.get("event_time")
    return CreateArgs(
        content=content,
        scope=scope,
        target_user=target,
        event_time=parse_time(event_time, "event_time") if event_time is not None else None,
    )


def parse_memory_id(value: Any) -> int:
    """Accept ``7``, ``"7"`` or ``"ID:7"``; reject anything else.

    Raises:
        ArgumentError: when the value is not a safe positive integer.
    """
    number: int | None = None
    if isinstance(value, bool):
        number = None
    elif isinstance(value, int):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str):
        match = _ID_TEXT.match(value)
        number = int(match.group(1)) if match else None
    if number is None or not 0 < number <= MAX_SAFE_INTEGER:
        raise ArgumentError(
            "memory_id must be the positive integer N shown as ID:N in your context"
        )
    return number


def parse_update_args(arguments: Mapping[str, Any]) -> UpdateArgs:
    """Validate ``update_long_term_memory`` arguments.

    Raises:
        ArgumentError: with a reason the model can act on.
    """
    reject_unknown(arguments, ("memory_id", "memory_content", "target_user", "event_time"))
    memory_id = parse_memory_id(arguments.get("memory_id"))
    content = arguments.get("memory_content")
    if not isinstance(content, str):
        raise ArgumentError(
            "memory_content is required and must be a string (an empty string deletes the memory)"
        )
    event_time = arguments.get("event_time")
    return UpdateArgs(
        memory_id=memory_id,
        content=content,
        target_user=_optional_name(arguments, "target_user"),
        event_time=None if event_time is None else parse_time(event_time, "event_time"),
    )
