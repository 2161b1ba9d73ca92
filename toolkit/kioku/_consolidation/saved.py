"""A dry run's plan kept for later, so that what is applied is what was reviewed: pure.

A saved plan holds the model's reply and the text of every memory it was shown. Applying
it asks no model: the reply is read again by :func:`~kioku._consolidation.plan.parse_plan`
(every check of a fresh reply applies) over the memories still as they were shown, so an
action naming a memory whose text changed, or that is gone, since the plan was made is
dropped with the reason, and ids the file adds count for nothing. A saved plan
is untrusted input like a reply: it can only propose what a reply could.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kioku._domain.scopes import PersonalScope, ServerScope
from kioku._errors import ConfigurationError

FORMAT = "kioku-consolidation-plan"
VERSION = 1


@dataclass(frozen=True, slots=True)
class SavedPlan:
    """A consolidation plan as reviewed: the scope, the model's reply, what it was shown."""

    scope: ServerScope | PersonalScope
    reply: str
    shown: Mapping[int, str]
    """Each memory shown to the model, by id: its text at the time."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready values (what ``kioku consolidate --save-plan`` writes)."""
        return {
            "format": FORMAT,
            "version": VERSION,
            "scope": {
                "kind": self.scope.kind,
                "owner": self.scope.owner_id,
                "lineage": self.scope.lineage_id,
            },
            "reply": self.reply,
            "shown": [{"id": i, "content": text} for i, text in self.shown.items()],
        }

    @classmethod
    def from_dict(cls, data: Any) -> SavedPlan:
        """Read :meth:`to_dict`'s values back.

        Raises:
            ConfigurationError: ``data`` is not a saved plan; the message says what is wrong.
        """
        try:
            if data.get("format") != FORMAT or data.get("version") != VERSION:
                raise ValueError(f"not a {FORMAT} (version {VERSION})")
            scope, reply = data["scope"], data["reply"]
            kind, owner, lineage = scope["kind"], scope["owner"], scope["lineage"]
            if not isinstance(owner, str) or type(lineage) is not int or kind not in _SCOPES:
                raise ValueError("its scope is not a server or personal scope")
            if not isinstance(reply, str):
                raise ValueError("its reply is not text")
            shown = {_memory_id(item["id"]): _text(item["content"]) for item in data["shown"]}
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise ConfigurationError(
                f"the file is not a saved consolidation plan ({exc})"
            ) from None
        return cls(_SCOPES[kind](owner, lineage), reply, shown)


_SCOPES: dict[str, type[ServerScope] | type[PersonalScope]] = {
    "server": ServerScope,
    "personal": PersonalScope,
}


def _memory_id(value: Any) -> int:
    if type(value) is not int or value <= 0:
        raise ValueError(f"a shown id is {value!r}")
    return value


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("a shown memory's content is not text")
    return value


def changed_since(plan: SavedPlan, current: Mapping[int, str]) -> dict[int, str]:
    """Why each memory of ``plan`` that is no longer as it was shown may not be named.

    Args:
        plan: the saved plan.
        current: the scope's memories now (its newest), by id.
    """
    reasons: dict[int, str] = {}
    for memory_id, text in plan.shown.items():
        now = current.get(memory_id)
        if now is None:
            reasons[memory_id] = (
                f"ID:{memory_id} is not among the scope's newest memories now (deleted, moved "
                "out of the window, or never in this scope)"
            )
        elif now != text:
            reasons[memory_id] = f"ID:{memory_id} changed since the plan was made"
    return reasons
