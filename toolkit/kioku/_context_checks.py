"""Checks of a turn context's fields, pure: a malformed context fails where it is made.

A :class:`kioku.TurnContext` (and its :class:`~kioku.Participant` and
:class:`~kioku.Persona`) is the developer's input: a wrong value (``user=None``, a number
as a channel id, one string as aliases) would otherwise surface turns later as an
``AttributeError`` deep inside a tool. Each check raises :class:`ConfigurationError` with
one line naming the field, what it got and what to pass.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, TypeVar

from kioku._errors import ConfigurationError
from kioku._memory.when import in_utc

T = TypeVar("T")
PARTICIPANT_FORM = "Participant(user_id, display_name) (or a dict with those keys)"
PERSONA_FORM = "Persona(persona_id, name, lineage_id) (or a dict with those keys)"


def _got(value: object) -> str:
    return "None" if value is None else type(value).__name__


def text(owner: str, field: str, value: object, *, optional: bool = False) -> None:
    """Refuse a ``field`` that is not a string (``None`` too, unless ``optional``)."""
    if isinstance(value, str) or (optional and value is None):
        return
    form = "a string or None" if optional else "a string"
    raise ConfigurationError(f"{owner}: {field} must be {form}, not {_got(value)}")


def flag(owner: str, field: str, value: object) -> None:
    """Refuse a ``field`` that is not ``True`` or ``False``."""
    if not isinstance(value, bool):
        raise ConfigurationError(f"{owner}: {field} must be True or False, not {_got(value)}")


def integer(owner: str, field: str, value: object) -> None:
    """Refuse a ``field`` that is not an integer (a bool is not one here)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigurationError(f"{owner}: {field} must be an integer, not {_got(value)}")


def names(owner: str, field: str, value: object) -> tuple[str, ...]:
    """``value`` as a tuple of strings; one string alone is refused (not split into letters)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (tuple, list)):
        raise ConfigurationError(
            f"{owner}: {field} must be a tuple of strings, e.g. {field}=('ali',), not {_got(value)}"
        )
    for item in value:
        text(owner, f"{field} items", item)
    return tuple(value)


def callback(owner: str, field: str, value: object) -> None:
    """Refuse a ``field`` that is neither callable nor ``None``."""
    if value is not None and not callable(value):
        raise ConfigurationError(f"{owner}: {field} must be a callable or None, not {_got(value)}")


def built(
    owner: str, field: str, value: object, kind: type[T], build: Callable[[Any], T], form: str
) -> T:
    """``value`` if it is a ``kind``, else built from a dict by ``build``; else refused.

    ``form`` says what to pass, e.g. ``user=Participant(user_id, display_name)``.
    """
    if isinstance(value, kind):
        return value
    if isinstance(value, dict):
        try:
            return build(value)
        except ConfigurationError as exc:
            raise ConfigurationError(f"{owner}: {field}: {exc}") from None
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigurationError(
                f"{owner}: {field} could not be read from {sorted(map(str, value))} "
                f"({type(exc).__name__}: {exc}); pass {form}"
            ) from None
    raise ConfigurationError(
        f"{owner}: {field} must be {kind.__name__}, not {_got(value)}; pass {form}"
    )


def each_built(
    owner: str, field: str, value: object, kind: type[T], build: Callable[[Any], T], form: str
) -> tuple[T, ...]:
    """Every item of the tuple or list ``value`` as by :func:`built`."""
    if isinstance(value, (str, bytes, dict)) or not isinstance(value, Iterable):
        raise ConfigurationError(
            f"{owner}: {field} must be a tuple of {kind.__name__}, not {_got(value)}"
        )
    return tuple(built(owner, f"{field} items", item, kind, build, form) for item in value)


def message_time(value: object) -> datetime:
    """``message_time`` as a datetime kioku can store, or a one-line error.

    Text is read as ISO 8601: a context sent as JSON (LangGraph's API) carries it so.
    """
    from kioku._memory.arguments import ArgumentError, parse_time

    if isinstance(value, str):
        try:
            return parse_time(value, "message_time")
        except ArgumentError as exc:
            raise ConfigurationError(f"TurnContext: {exc}") from None
    if not isinstance(value, datetime):
        raise ConfigurationError(
            "TurnContext: message_time must be a datetime (or ISO 8601 text), not "
            f"{type(value).__name__}"
        )
    if in_utc(value) is None:
        raise ConfigurationError(
            "TurnContext: message_time must lie between 0001-01-02 and 9999-12-30 (UTC)"
        )
    return value
