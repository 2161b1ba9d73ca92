"""The model-supplied tool arguments: pydantic models, and the rules behind them (pure).

Each tool's arguments are one :class:`ToolArguments` model: its fields give the JSON
schema the model sees (:func:`kioku._tools.schema.model_facing_schema`) and validate a
call (:func:`validated`, the one place a ``ValidationError`` becomes an
:class:`ArgumentError` with a reason the model can act on; each flow answers it with its
tool's ``…_invalid_args`` status).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal, Self, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from kioku._memory.text import echo, unstorable
from kioku._memory.when import in_utc

MAX_SAFE_INTEGER = 2**53 - 1
MAX_NAME_LENGTH = 256
"""Characters in a person's name (``target_user``)."""
MAX_LISTED_NAMES = 5
"""Unknown argument names a reason lists before ``and N more``."""
MEMORY_ID_FORM = "memory_id must be the positive integer N shown as ID:N in your context"
_ID_TEXT = re.compile(r"^\s*(?:id\s*[:#]?\s*)?(\d{1,16})\s*$", re.IGNORECASE)

Scope = Literal["server_wide", "target_user"]
Arguments = TypeVar("Arguments", bound="ToolArguments")


class ArgumentError(ValueError):
    """Raised by the parsers below with a reason for the model."""


def check_storable(field: str, value: str) -> str:
    """``value`` unchanged if PostgreSQL can store it (no NUL, no lone surrogate).

    Raises:
        ArgumentError: naming ``field`` and what is wrong (never repeating ``value``).
    """
    reason = _unstorable_reason(field, value)
    if reason is not None:
        raise ArgumentError(reason)
    return value


def _unstorable_reason(field: str, value: str) -> str | None:
    problem = unstorable(value)
    return None if problem is None else f"{field} contains {problem}; remove it and call again"


def check_text(field: str, value: str, max_length: int) -> str:
    """``value`` unchanged if it is at most ``max_length`` characters and storable.

    The one rule for strings that are checked rather than sanitised (names, queries,
    metadata): PostgreSQL cannot hold NUL or surrogates, so they are refused here.

    Raises:
        ArgumentError: naming ``field`` and what is wrong (never repeating ``value``).
    """
    if len(value) > max_length:
        raise ArgumentError(too_long(field, len(value), max_length))
    return check_storable(field, value)


def too_long(field: str, length: int, max_length: int) -> str:
    """The reason refusing a string of ``length`` characters."""
    return f"{field} is {length} characters; the maximum is {max_length}"


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
        raise ArgumentError(MEMORY_ID_FORM)
    return number


@dataclass(frozen=True, slots=True)
class Form:
    """What a field accepts, as its reason when a value is missing or of another type.

    Put in the field's ``Annotated`` metadata; the rules' own reasons (an
    :class:`ArgumentError` raised by a validator) are used as they are.
    """

    reason: str


class ToolArguments(BaseModel):
    """Base of the tools' argument models: strict types, no unknown names, frozen."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


def validated(model: type[Arguments], arguments: Mapping[str, Any]) -> Arguments:
    """``arguments`` validated by ``model``: the one place a ``ValidationError`` is read.

    Unknown names are refused first (a few echoed, capped); then the first fault, in the
    order of the model's fields, gives the reason.

    Raises:
        ArgumentError: with a reason the model can act on.
    """
    names = {field.alias or name: field for name, field in model.model_fields.items()}
    reject_unknown(arguments, names)
    try:
        return model.model_validate(dict(arguments))
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
    raise ArgumentError(_reason(error, names))


def _reason(error: ErrorDetails, fields: Mapping[str, FieldInfo]) -> str:
    kind, where = error["type"], error["loc"]
    name = str(where[0]) if where else "arguments"
    if kind == "value_error":  # a rule's own ArgumentError
        return str(error.get("ctx", {}).get("error", error["msg"]))
    value = error["input"]
    if kind == "string_too_long" and isinstance(value, str):
        return too_long(name, len(value), error.get("ctx", {}).get("max_length", 0))
    if kind == "string_unicode" and isinstance(value, str):  # a surrogate, under a constraint
        return _unstorable_reason(name, value) or f"{name} is not valid Unicode"
    field = fields.get(name)
    forms = [item for item in (field.metadata if field else ()) if isinstance(item, Form)]
    return forms[0].reason if forms else f"{name} is not valid"


def _moment(value: Any, info: ValidationInfo) -> datetime | None:
    return None if value is None else parse_time(value, info.field_name or "time")


def _person(value: str | None) -> str | None:
    if value is None:
        return None
    # A control character (NUL included) makes a name nobody has, answered as not found
    # (SPEC §3 step 4); a lone surrogate is not text at all.
    check_storable("target_user", value.replace("\x00", ""))
    return value if value.strip() else None


def _fact(value: str) -> str:
    if not value.strip():
        raise ArgumentError("memory_content is blank; write the fact to remember")
    return value


Moment = Annotated[datetime | None, BeforeValidator(_moment), WithJsonSchema({"type": "string"})]
"""An ISO 8601 date or date-time (:func:`parse_time`), ``None`` when omitted or null."""
MemoryId = Annotated[int, Field(ge=1), BeforeValidator(parse_memory_id), Form(MEMORY_ID_FORM)]
"""A memory's N of ``ID:N``: ``7``, ``"7"`` or ``"ID:7"`` (:func:`parse_memory_id`)."""
PersonName = Annotated[
    str | None,
    Field(max_length=MAX_NAME_LENGTH),
    AfterValidator(_person),
    Form("target_user must be a string (the person's name as shown), or omitted"),
]
"""A person's name as shown in the conversation; blank is ``None``."""
EVENT_TIME = (
    "When what it records happened, as an ISO 8601 date or date-time (optional; "
    "default: now). Give it for facts about past or planned events."
)


class CreateArgs(ToolArguments):
    """Validated arguments of ``create_long_term_memory``."""

    model_config = ConfigDict(title="create_long_term_memory")

    content: Annotated[
        str,
        Field(
            alias="memory_content",
            description=(
                "The fact to remember, third person, with {user}/{bot} tokens instead of "
                "names, e.g. '{user} prefers tea over coffee'."
            ),
        ),
        AfterValidator(_fact),
        Form("memory_content is required and must be a string"),
    ]
    scope: Annotated[
        Scope,
        Field(
            alias="memory_scope",
            description=(
                "'server_wide' for facts about this server or everyone; 'target_user' for a "
                "personal fact about one person."
            ),
        ),
        Form("memory_scope must be 'server_wide' or 'target_user'"),
    ]
    target_user: Annotated[
        PersonName,
        Field(
            description=(
                "Required when memory_scope is 'target_user': the name, as shown in the "
                "conversation, of a person taking part in it (not an id)."
            )
        ),
    ] = None
    event_time: Annotated[Moment, Field(description=EVENT_TIME)] = None
    """When what it records happened, if the model says."""

    @model_validator(mode="after")
    def _names_the_person(self) -> Self:
        if self.scope == "target_user" and self.target_user is None:
            raise ArgumentError(
                "target_user (the person's name) is required when memory_scope is 'target_user'"
            )
        return self


class UpdateArgs(ToolArguments):
    """Validated arguments of ``update_long_term_memory``."""

    model_config = ConfigDict(title="update_long_term_memory")

    memory_id: Annotated[
        MemoryId, Field(description="The N of the ID:N shown before the memory in your context.")
    ]
    content: Annotated[
        str,
        Field(
            alias="memory_content",
            description="Full replacement text; an empty string deletes the memory.",
        ),
        Form(
            "memory_content is required and must be a string (an empty string deletes the memory)"
        ),
    ]
    target_user: Annotated[
        PersonName,
        Field(
            description=(
                "Only for a personal memory: its owner's name as shown in the conversation."
            )
        ),
    ] = None
    event_time: Annotated[
        Moment,
        Field(
            description=(
                "Optional: correct when what it records happened (ISO 8601 date or "
                "date-time); omitted, the memory keeps its time."
            )
        ),
    ] = None
    """A corrected time of the memory's event (UTC); ``None`` keeps its time."""


def parse_create_args(arguments: Mapping[str, Any]) -> CreateArgs:
    """Validate ``create_long_term_memory`` arguments.

    Raises:
        ArgumentError: with a reason the model can act on.
    """
    return validated(CreateArgs, arguments)


def parse_update_args(arguments: Mapping[str, Any]) -> UpdateArgs:
    """Validate ``update_long_term_memory`` arguments.

    Raises:
        ArgumentError: with a reason the model can act on.
    """
    return validated(UpdateArgs, arguments)
