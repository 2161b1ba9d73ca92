"""What a consolidation pass found and did, and its readable form: pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from kioku._consolidation.plan import ActionKind, ConsolidationPlan
from kioku._consolidation.saved import SavedPlan
from kioku._domain.scopes import PersonalScope, ServerScope
from kioku._domain.statuses import UpdateStatus
from kioku._memory.text import as_data

SKIPPED = "skipped"
"""Status of a removal not tried because its merge's kept memory could not be updated."""
APPLIED_STATUSES = frozenset({UpdateStatus.UPDATED, UpdateStatus.DELETED})


@dataclass(frozen=True, slots=True)
class ChangeOutcome:
    """One change of an applied plan: the ``update_long_term_memory`` flow's answer."""

    kind: ActionKind
    index: int
    """The action's position in its list of the plan (1-based)."""
    memory_id: int
    change: Literal["update", "delete"]
    status: str
    """The flow's status (``memory_updated_successfully``, ``…_failed_…``), or ``skipped``."""
    reason: str | None

    @property
    def applied(self) -> bool:
        """Whether the change was made."""
        return self.status in APPLIED_STATUSES


@dataclass(frozen=True, slots=True)
class ConsolidationReport:
    """A consolidation pass over one scope: what was shown, the plan, what was applied."""

    scope: ServerScope | PersonalScope
    description: str
    """The scope in words (as the model was told)."""
    shown: tuple[int, ...]
    """Ids of the memories shown to the model (the newest, up to the window)."""
    total: int
    """Active memories in the scope when it was read."""
    plan: ConsolidationPlan
    reply: str | None
    """The model's reply; ``None`` when the model was not asked."""
    applied: bool
    """Whether the plan was carried out (``apply=True``); a dry run changes nothing."""
    outcomes: tuple[ChangeOutcome, ...] = ()
    """One per change tried, in order (empty for a dry run)."""
    shown_texts: tuple[str, ...] = ()
    """The text of each memory of ``shown``, in the same order."""
    from_saved_plan: bool = False
    """Whether the plan was a saved one (no model was asked)."""

    def saved_plan(self) -> SavedPlan | None:
        """The plan as reviewed, to apply later without asking the model again.

        ``None`` when the model was not asked (nothing to save).
        """
        if self.reply is None:
            return None
        return SavedPlan(
            self.scope, self.reply, dict(zip(self.shown, self.shown_texts, strict=True))
        )

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready values."""
        return {
            "scope": {
                "kind": self.scope.kind,
                "owner": self.scope.owner_id,
                "lineage": self.scope.lineage_id,
            },
            "description": self.description,
            "shown": list(self.shown),
            "total": self.total,
            "plan": self.plan.to_dict(),
            "applied": self.applied,
            "outcomes": [
                {
                    "kind": o.kind,
                    "index": o.index,
                    "memory_id": o.memory_id,
                    "change": o.change,
                    "status": o.status,
                    "reason": o.reason,
                }
                for o in self.outcomes
            ],
        }

    def render(self) -> str:
        """The report as plain text lines, for a terminal.

        Text that came from the model (merged text, reasons) is shown as data
        (:func:`as_data`); kioku's reasons and statuses are put on one line without
        control characters.
        """
        source = "in the saved plan" if self.from_saved_plan else "shown to the model"
        lines = [
            f"Consolidation of {self.description}: {len(self.shown)} of {self.total} "
            f"memories {source}."
        ]
        if self.plan.error:
            lines.append(f"No plan: {_one_line(self.plan.error)}")
        elif self.reply is None:
            lines.append("Fewer than two memories: nothing to consolidate.")
        if self.reply is not None:
            lines.extend(_plan_lines(self.plan))
        if self.applied:
            lines.append("Applied:" if self.outcomes else "Applied: nothing to change.")
            lines.extend(f"  {_outcome_line(o)}" for o in self.outcomes)
        elif not self.plan.is_empty:
            lines.append(
                "Dry run: nothing was changed (--apply with the same --plan carries it out)."
                if self.from_saved_plan
                else "Dry run: nothing was changed (apply=True or --apply carries it out; "
                "--save-plan keeps this plan, to apply exactly it with --plan)."
            )
        return "\n".join(lines)


def _plan_lines(plan: ConsolidationPlan) -> list[str]:
    lines: list[str] = []
    if plan.merges:
        lines.append("Merges:")
    for n, merge in enumerate(plan.merges, 1):
        lines.append(f"  {n}. keep ID:{merge.keep}, remove {_ids(merge.remove)}")
        text = as_data(merge.content) if merge.content is not None else "(unchanged)"
        lines.append(f"     new text: {text}")
    if plan.supersessions:
        lines.append("Supersessions:")
    for n, sup in enumerate(plan.supersessions, 1):
        why = f": {as_data(sup.reason)}" if sup.reason else ""
        lines.append(f"  {n}. keep ID:{sup.keep}, remove {_ids(sup.remove)}{why}")
    if not plan.error and plan.is_empty:
        lines.append("No changes proposed.")
    if plan.rejected:
        lines.append("Refused from the model's reply:")
    lines.extend(
        f"  - {r.kind} {r.index}: {_one_line(r.reason)}"
        if r.index
        else f"  - {_one_line(r.reason)}"
        for r in plan.rejected
    )
    return lines


def _ids(ids: tuple[int, ...]) -> str:
    return ", ".join(f"ID:{i}" for i in ids)


def _outcome_line(outcome: ChangeOutcome) -> str:
    done = {"update": "updated", "delete": "deleted"}[outcome.change]
    head = f"{outcome.kind} {outcome.index}: ID:{outcome.memory_id}"
    if outcome.applied:
        return f"{head} {done}"
    why = f": {_one_line(outcome.reason)}" if outcome.reason else ""
    return f"{head} not {done} ({outcome.status}){why}"


def _one_line(text: str) -> str:
    """``text`` on one line, without control or format characters (terminal-safe)."""
    return " ".join("".join(c if c.isprintable() else " " for c in text).split())
