"""The model's reply read as a consolidation plan: pure, never raises.

A reply is untrusted text. It becomes a :class:`ConsolidationPlan` of the actions that
pass every check; each action that does not is kept as a :class:`RejectedAction` with the
reason, and a reply that is no JSON object at all gives an empty plan with an ``error``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from kioku._memory.arguments import ArgumentError, parse_memory_id
from kioku._memory.text import SHOWS_AS_NOTHING, ContentFault, check_content, echo, sanitise_content

ActionKind = Literal["merge", "supersession"]

MAX_REPLY_CHARACTERS = 1_000_000
"""A longer reply is not parsed (an empty plan with an error)."""
MAX_REASON_CHARACTERS = 300
"""Characters of a supersession's reason kept in the plan."""
_FENCED = re.compile(r"```(?:json|JSON)?[ \t]*\n?(.*?)```", re.S)


@dataclass(frozen=True, slots=True)
class MergeAction:
    """Duplicates folded into one memory: ``keep`` stays, ``remove`` are deleted."""

    keep: int
    """The memory that stays (updated to ``content`` when given)."""
    remove: tuple[int, ...]
    """Memories deleted once ``keep`` holds what they said."""
    content: str | None
    """The kept memory's new text (sanitised, within the length limit); ``None``: unchanged."""


@dataclass(frozen=True, slots=True)
class SupersessionAction:
    """Outdated memories contradicted by ``keep``, which stays as it is."""

    keep: int
    """The memory that is true now (not changed)."""
    remove: tuple[int, ...]
    """The contradicted memories, deleted."""
    reason: str
    """Why, in the model's words (at most ``MAX_REASON_CHARACTERS``)."""


@dataclass(frozen=True, slots=True)
class RejectedAction:
    """An action of the reply that was dropped, and why."""

    kind: ActionKind
    index: int
    """Its position in the reply's list (1-based)."""
    reason: str


@dataclass(frozen=True, slots=True)
class ConsolidationPlan:
    """What the model proposed, checked: only memories that were shown, each at most once."""

    merges: tuple[MergeAction, ...] = ()
    supersessions: tuple[SupersessionAction, ...] = ()
    rejected: tuple[RejectedAction, ...] = ()
    """Actions dropped from the reply, with reasons."""
    error: str | None = None
    """Why there is no plan at all (a reply that is not a JSON object), else ``None``."""

    @property
    def is_empty(self) -> bool:
        """Whether the plan changes nothing."""
        return not self.merges and not self.supersessions

    def to_dict(self) -> dict[str, Any]:
        """The plan as JSON-ready values."""
        return {
            "merges": [
                {"keep": m.keep, "remove": list(m.remove), "content": m.content}
                for m in self.merges
            ],
            "supersessions": [
                {"keep": s.keep, "remove": list(s.remove), "reason": s.reason}
                for s in self.supersessions
            ],
            "rejected": [
                {"kind": r.kind, "index": r.index, "reason": r.reason} for r in self.rejected
            ],
            "error": self.error,
        }


class _Refused(ValueError):
    """One action fails a check; the message is the reason recorded."""


def parse_plan(
    reply: str,
    shown: Collection[int],
    *,
    max_length: int,
    why_not: Mapping[int, str] | None = None,
) -> ConsolidationPlan:
    """Read the model's ``reply`` as a plan over the memories ``shown`` to it.

    Args:
        reply: the model's text: a JSON object (see ``CONSOLIDATION_PROMPT``), possibly in
            a code fence or with words around it.
        shown: ids of the memories the prompt listed; no other id is accepted.
        max_length: the longest merged text accepted (``MAX_MEMORY_LENGTH``).
        why_not: the reason to give for an id not in ``shown`` (a saved plan's memory that
            changed since), instead of "not among the memories shown".

    Returns:
        The plan; never raises. Invalid actions are in ``rejected``, and a reply that is
        not a JSON object gives an empty plan with ``error`` set. One pass removes at most
        half of the memories shown (at least one), whatever the reply asks: memory text
        can try to talk the model into dropping everything.
    """
    try:
        data = _json_object(reply)
    except ValueError as exc:
        return ConsolidationPlan(error=str(exc))
    claimed: dict[int, str] = {}
    allowed = frozenset(shown)
    merges: list[MergeAction] = []
    supersessions: list[SupersessionAction] = []
    rejected: list[RejectedAction] = []
    most_removed = max(1, len(allowed) // 2)
    removed = 0
    for kind, index, item in _items(data, rejected):
        try:
            keep, remove = _ids(item, allowed, claimed, why_not or {})
            if removed + len(remove) > most_removed:
                raise _Refused(
                    f"would remove more than {most_removed} of the {len(allowed)} memories "
                    "shown in one pass (run consolidation again to go further)"
                )
            removed += len(remove)
            if kind == "merge":
                merges.append(MergeAction(keep, remove, _content(item, max_length)))
            else:
                supersessions.append(SupersessionAction(keep, remove, _reason(item)))
        except _Refused as refused:
            rejected.append(RejectedAction(kind, index, str(refused)))
            continue
        for memory_id in (keep, *remove):
            claimed[memory_id] = f"{kind} {index}"
    return ConsolidationPlan(tuple(merges), tuple(supersessions), tuple(rejected))


def _json_object(reply: str) -> dict[str, Any]:
    """The plan object in ``reply``: the whole text, a fenced block, or one in the words.

    Words around the object may hold braces of their own ("{user}"): objects are read where
    each brace opens, and the first one naming ``merges`` or ``supersessions`` wins.

    Raises:
        ValueError: no JSON object could be read, or none names a plan's lists; the
            message says why.
    """
    if len(reply) > MAX_REPLY_CHARACTERS:
        raise ValueError(
            f"the reply is {len(reply)} characters; at most {MAX_REPLY_CHARACTERS} are read"
        )
    text = reply.strip()
    found: list[Any] = []
    for candidate in (text, *(m.group(1).strip() for m in _FENCED.finditer(text))):
        try:
            found.append(json.loads(candidate))
        except (ValueError, RecursionError):
            continue
    found.extend(_embedded_objects(text))
    objects = [value for value in found if isinstance(value, dict)]
    for value in objects:
        if _PLAN_KEYS & value.keys():
            return value
    if objects:
        if any(objects[0]):
            raise ValueError(
                'the reply\'s JSON object has neither "merges" nor "supersessions" '
                f"(it has {', '.join(sorted(map(str, objects[0]))[:5])})"
            )
        return objects[0]
    if found:
        raise ValueError(f"the reply is JSON but not an object (a {type(found[0]).__name__})")
    raise ValueError(f"the reply is not JSON: {echo(text)!r}" if text else "the reply is empty")


_PLAN_KEYS = frozenset({"merges", "supersessions"})
_MOST_OPENINGS = 64
"""Braces tried as the start of an object in a reply's words (each read costs a scan)."""


def _embedded_objects(text: str) -> Iterator[Any]:
    """JSON values that start at the first few ``{`` of ``text``."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    for _ in range(_MOST_OPENINGS):
        if start < 0:
            return
        try:
            value, end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            start = text.find("{", start + 1)
            continue
        yield value
        start = text.find("{", end)


def _items(
    data: Mapping[str, Any], rejected: list[RejectedAction]
) -> Iterator[tuple[ActionKind, int, Any]]:
    """Each action the reply lists, merges first; a list that is not a list is rejected."""
    kinds: tuple[tuple[ActionKind, str], ...] = (
        ("merge", "merges"),
        ("supersession", "supersessions"),
    )
    for kind, key in kinds:
        listed = data.get(key)
        if listed is None:
            continue
        if not isinstance(listed, list):
            rejected.append(RejectedAction(kind, 0, f'"{key}" is not a list; ignored'))
            continue
        for index, item in enumerate(listed, 1):
            yield kind, index, item


def _ids(
    item: Any, allowed: frozenset[int], claimed: Mapping[int, str], why_not: Mapping[int, str]
) -> tuple[int, tuple[int, ...]]:
    """The action's ``keep`` and ``remove`` ids, each shown, distinct and not yet claimed."""
    if not isinstance(item, dict):
        raise _Refused("not an object with keep and remove")
    keep = _id(item.get("keep"), "keep")
    listed = item.get("remove")
    if not isinstance(listed, list):
        listed = [listed] if listed is not None else []
    if not listed:
        raise _Refused("remove lists no memory")
    remove = tuple(_id(value, "remove") for value in listed)
    ids = (keep, *remove)
    if len(set(ids)) != len(ids):
        raise _Refused("names a memory twice (keep and remove must be different memories)")
    for memory_id in ids:
        if memory_id not in allowed:
            raise _Refused(
                why_not.get(memory_id, f"ID:{memory_id} was not among the memories shown")
            )
        if memory_id in claimed:
            raise _Refused(f"ID:{memory_id} is already in {claimed[memory_id]}")
    return keep, remove


def _id(value: Any, field: str) -> int:
    try:
        return parse_memory_id(value)
    except ArgumentError:
        raise _Refused(f"{field} holds {echo(repr(value), 40)}, not an ID:N") from None


def _content(item: Mapping[str, Any], max_length: int) -> str | None:
    """The merged text, sanitised like any memory, or ``None`` (the kept text stays)."""
    value = item.get("content")
    if value is None:
        return None
    if not isinstance(value, str):
        raise _Refused("content is not a string")
    checked = check_content(value, max_length)
    if checked.fault is ContentFault.EMPTY:
        if value.strip():
            raise _Refused("content holds only characters that cannot be stored")
        return None
    if checked.fault is ContentFault.SHOWS_AS_NOTHING:
        raise _Refused(f"content {SHOWS_AS_NOTHING}")
    if checked.fault is ContentFault.TOO_LONG:
        raise _Refused(checked.too_long("content", max_length))
    return checked.text


def _reason(item: Mapping[str, Any]) -> str:
    value = item.get("reason")
    return echo(sanitise_content(value), MAX_REASON_CHARACTERS) if isinstance(value, str) else ""
