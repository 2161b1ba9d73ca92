"""A consolidation pass: read a scope, ask the model once, and apply the plan if asked.

Applying goes through ``update_long_term_memory``'s own flow, change by change (an update
with the merged text, a delete as an update with empty content), so its scope checks,
privacy rules, length limit, history rows, cache invalidation and notices all apply.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel

from kioku._accounts import AccountRepository
from kioku._consolidation.plan import ActionKind, ConsolidationPlan, parse_plan
from kioku._consolidation.prompt import consolidation_messages
from kioku._consolidation.report import SKIPPED, ChangeOutcome, ConsolidationReport
from kioku._consolidation.saved import SavedPlan, changed_since
from kioku._consolidation.scope import consolidation_context
from kioku._context import TurnContext
from kioku._deps import KiokuDeps
from kioku._domain.scopes import PersonalScope, ServerScope
from kioku._domain.statuses import UpdateStatus
from kioku._errors import ConfigurationError
from kioku._memory.results import ToolResult
from kioku._memory.subjects import carry_subjects
from kioku._memory.update import update_long_term_memory
from kioku._memory.windows import MemoryWindow
from kioku._models import ask_model
from kioku._reach import reach_of

logger = logging.getLogger(__name__)

MIN_MEMORIES = 2
"""Fewer memories than this are not sent to the model: there is nothing to consolidate."""


def consolidate(
    deps: KiokuDeps,
    scope: ServerScope | PersonalScope,
    model: BaseChatModel | None,
    *,
    apply: bool = False,
    context: TurnContext | None = None,
    plan: SavedPlan | None = None,
) -> ConsolidationReport:
    """Run one consolidation pass over ``scope`` (see :meth:`kioku.KiokuStore.consolidate`).

    With ``plan`` (a saved one) no model is asked: see :mod:`kioku._consolidation.saved`.
    """
    _check_source(scope, model, plan)
    context = context or consolidation_context(deps, scope)
    check_context(scope, context)
    run = _Pass(deps, scope, context, describe(scope, context), deps.windows.window(scope), apply)
    refusal = _privacy_refusal(deps, scope, context)
    if refusal is not None:
        return run.report((), ConsolidationPlan(error=refusal), None)
    if plan is not None:
        return run.with_saved_plan(plan)
    assert model is not None  # checked by _check_source
    return run.with_model(model)


def _check_source(
    scope: ServerScope | PersonalScope, model: BaseChatModel | None, plan: SavedPlan | None
) -> None:
    """Refuse a pass with neither a model nor a saved plan, or with another scope's plan.

    Raises:
        ConfigurationError: no model and no plan, or the plan is for another scope.
    """
    if plan is not None:
        if plan.scope != scope:
            raise ConfigurationError(
                f"the saved plan is for the {plan.scope.kind} scope {plan.scope.owner_id!r} "
                f"(lineage {plan.scope.lineage_id}), not the {scope.kind} scope {scope.owner_id!r} "
                f"(lineage {scope.lineage_id})"
            )
    elif model is None:
        raise ConfigurationError("consolidate needs a chat model, or a saved plan to apply")


@dataclass(frozen=True)
class _Pass:
    """One consolidation pass over a scope whose memories have been read."""

    deps: KiokuDeps
    scope: ServerScope | PersonalScope
    context: TurnContext
    description: str
    window: MemoryWindow
    apply: bool

    def report(
        self,
        shown: tuple[int, ...],
        plan: ConsolidationPlan,
        reply: str | None,
        outcomes: tuple[ChangeOutcome, ...] = (),
        texts: tuple[str, ...] = (),
        *,
        from_saved_plan: bool = False,
    ) -> ConsolidationReport:
        """The pass's report: ``shown`` memories (their ``texts``), the plan and its outcomes."""
        return ConsolidationReport(
            self.scope,
            self.description,
            shown,
            self.window.total,
            plan,
            reply,
            self.apply,
            outcomes,
            texts,
            from_saved_plan=from_saved_plan,
        )

    def with_saved_plan(self, plan: SavedPlan) -> ConsolidationReport:
        """Check ``plan`` against the memories as they are now; apply it if asked."""
        max_length = self.deps.settings.max_memory_length
        # Only memories still as they were shown count as shown: ids a file adds, or
        # memories changed since, neither widen the one-pass limit nor reach the flow.
        checked, still = _checked_against_now(self.deps, self.scope, plan, max_length)
        outcomes = apply_plan(self.deps, self.scope, self.context, checked) if self.apply else ()
        texts = tuple(still.values())
        return self.report(tuple(still), checked, plan.reply, outcomes, texts, from_saved_plan=True)

    def with_model(self, model: BaseChatModel) -> ConsolidationReport:
        """Ask ``model`` once for a plan over the window's memories; apply it if asked."""
        records = self.window.records
        shown = tuple(record.id for record in records)
        texts = tuple(record.content for record in records)
        if len(shown) < MIN_MEMORIES:
            return self.report(shown, ConsolidationPlan(), None)
        max_length = self.deps.settings.max_memory_length
        messages = consolidation_messages(
            records, scope_description=self.description, max_length=max_length
        )
        reply = ask_model(model, messages)
        if not self.apply:
            parsed = parse_plan(reply, shown, max_length=max_length)
            return self.report(shown, parsed, reply, (), texts)
        # The model may think for a while: a memory changed or deleted meanwhile (by a turn of
        # another worker) is not merged or removed on the strength of its old text.
        asked = SavedPlan(self.scope, reply, dict(zip(shown, texts, strict=True)))
        parsed, _ = _checked_against_now(self.deps, self.scope, asked, max_length)
        outcomes = apply_plan(self.deps, self.scope, self.context, parsed)
        return self.report(shown, parsed, reply, outcomes, texts)


def _checked_against_now(
    deps: KiokuDeps, scope: ServerScope | PersonalScope, plan: SavedPlan, max_length: int
) -> tuple[ConsolidationPlan, dict[int, str]]:
    """``plan``'s reply read over the memories still as they were shown, and those memories.

    The scope is read again: an action naming a memory whose text changed, or that is gone,
    since the model saw it is rejected with the reason.
    """
    current = {record.id: record.content for record in deps.windows.window(scope).records}
    changed = changed_since(plan, current)
    still = {i: text for i, text in plan.shown.items() if i not in changed}
    checked = parse_plan(plan.reply, tuple(still), max_length=max_length, why_not=changed)
    return checked, still


def check_context(scope: ServerScope | PersonalScope, context: TurnContext) -> None:
    """Refuse a context whose turn would address other memories than ``scope``.

    Raises:
        ConfigurationError: the context's server (or user) or lineage is not the scope's.
    """
    if context.persona.lineage_id != scope.lineage_id:
        raise ConfigurationError(
            f"the context's persona lineage is {context.persona.lineage_id}, the scope's "
            f"{scope.lineage_id}"
        )
    if isinstance(scope, ServerScope) and context.memory_server_key != scope.server_id:
        raise ConfigurationError(
            f"the context addresses the memories of {context.memory_server_key!r}, the scope "
            f"is {scope.server_id!r}"
        )
    if isinstance(scope, PersonalScope) and context.user.user_id != scope.user_id:
        raise ConfigurationError(
            f"a personal scope is consolidated as its owner's turn: the context's user is "
            f"{context.user.user_id!r}, the scope's {scope.user_id!r}"
        )


def describe(scope: ServerScope | PersonalScope, context: TurnContext) -> str:
    """The scope in words, for the model and the report."""
    persona = f"persona {context.persona.name}"
    if isinstance(scope, PersonalScope):
        return f"the personal memories of {context.user.display_name}, {{user}} in them ({persona})"
    if context.is_dm:
        return f"the memories of the direct-message conversation {context.channel_id} ({persona})"
    place = context.server_name or context.server_id
    return f"the server-wide memories of {place} ({persona})"


def _privacy_refusal(
    deps: KiokuDeps, scope: ServerScope | PersonalScope, context: TurnContext
) -> str | None:
    """Why a personal scope's memories may not be shown to a model, or ``None``.

    The rule of every turn: personal memories are shown only for ``MINIMAL`` people where
    the server has personal memories on (:func:`reach_of`).
    """
    if not isinstance(scope, PersonalScope):
        return None
    with deps.sessions() as session:
        settings = AccountRepository(session).settings_for(context)
    reach = reach_of(context, personal_memories_enabled=settings.personal_memories_enabled)
    if reach.shows_personal(scope.user_id):
        return None
    return (
        f"{context.user.display_name}'s personal memories are not shown to models here "
        "(their privacy level, or personal memories are off on the server); nothing was sent"
    )


def apply_plan(
    deps: KiokuDeps,
    scope: ServerScope | PersonalScope,
    context: TurnContext,
    plan: ConsolidationPlan,
) -> tuple[ChangeOutcome, ...]:
    """Carry out ``plan`` through the update flow, one change (one transaction) at a time.

    A merge first updates its kept memory (when it has new text) and removes the others
    only if that succeeded; a supersession removes the outdated memories. Each change is
    checked by the flow against the context's scope, so an id outside it changes nothing.
    """
    check_context(scope, context)
    owner = {"target_user": context.user.display_name} if isinstance(scope, PersonalScope) else {}
    outcomes: list[ChangeOutcome] = []

    def change(kind: ActionKind, index: int, memory_id: int, content: str) -> ChangeOutcome:
        arguments = {"memory_id": memory_id, "memory_content": content, **owner}
        result = _run_update(deps, context, arguments)
        made: Literal["update", "delete"] = "update" if content else "delete"
        return ChangeOutcome(kind, index, memory_id, made, result.status, result.reason)

    for index, merge in enumerate(plan.merges, 1):
        if merge.content is not None:
            kept = change("merge", index, merge.keep, merge.content)
            outcomes.append(kept)
            if not kept.applied:
                reason = f"ID:{merge.keep} could not be updated, so nothing was removed"
                outcomes.extend(
                    ChangeOutcome("merge", index, i, "delete", SKIPPED, reason)
                    for i in merge.remove
                )
                continue
            with deps.transaction() as session:
                carry_subjects(session, merge.keep, merge.remove)
        outcomes.extend(change("merge", index, i, "") for i in merge.remove)
    for index, supersession in enumerate(plan.supersessions, 1):
        outcomes.extend(change("supersession", index, i, "") for i in supersession.remove)
    return tuple(outcomes)


def _run_update(deps: KiokuDeps, context: TurnContext, arguments: dict[str, Any]) -> ToolResult:
    """One ``update_long_term_memory`` call, its session opened as the tool opens it."""
    try:
        with deps.sessions() as session:
            return update_long_term_memory(session, deps, context, arguments)
    except Exception:
        logger.exception("kioku: a consolidation change failed while opening its session")
        return ToolResult(UpdateStatus.INTERNAL_ERROR, "An internal error occurred.")
