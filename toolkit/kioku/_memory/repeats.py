"""A new memory that means the same as one its scope holds is refused (SPEC §3).

Compared as the context shows them, nearest first; an exact repeat is left to the write,
which answers ``already_saved`` under the scope's lock.
"""

from __future__ import annotations

from kioku._calibration import calibration_for
from kioku._context import TurnContext
from kioku._domain.scopes import PersonalScope, ServerScope
from kioku._domain.statuses import CreateStatus as S
from kioku._embeddings import embedding_text
from kioku._memory.flow import FlowCall, FlowFailure, fail
from kioku._memory.repository import MemoryRepository
from kioku._memory.resolution import Person
from kioku._memory.sameness import same_meaning
from kioku._memory.text import as_data, quoted_data, render_tokens
from kioku._memory.typed import TypedFields
from kioku._search.candidates import nearest
from kioku._search.rows import CandidateRow

DUPLICATE_CANDIDATES = 10
"""Nearest memories of the scope compared with a new one (near-misses can crowd the
one it repeats: "drinks 3 cups of tea" … "drinks 7 cups" around "drinks two cups")."""


def refuse_repeat(
    call: FlowCall,
    context: TurnContext,
    scope: ServerScope | PersonalScope,
    target: Person | None,
    content: str,
    embedding: list[float],
    typed: TypedFields,
) -> None:
    """Refuse a memory that means the same as one already in ``scope`` (which the turn sees).

    Identical text is left to the write, which answers ``already_saved``.
    """
    names = {
        "user_name": target.display_name if target is not None else "User",
        "bot_name": context.persona.name,
    }
    # Compared as the context shows them: "{user} likes tea" for Alice is "Alice likes
    # tea", and full-width letters are plain ones (folded as embeddings are).
    new_text = embedding_text(render_tokens(content, **names))
    threshold = _duplicate_threshold(call)
    for row in _nearest(call, scope, embedding):
        identical = row.content == content
        shown = render_tokens(row.content, **names)
        old_text = embedding_text(shown)
        if not (
            identical
            or _folded(old_text) == _folded(new_text)
            or same_meaning(old_text, new_text, 1.0 - row.score, threshold)
        ):
            continue
        repository = MemoryRepository(call.session)
        if not repository.same_event(row.id, typed.memory_type, typed.attributes):
            continue  # the same words, of an episode on another day
        if identical or repository.holds(scope, content, typed.memory_type, typed.attributes):
            return  # an exact repeat (maybe of a memory not embedded yet): already_saved
        raise _duplicate(row.id, shown, target)


def _duplicate_threshold(call: FlowCall) -> float:
    """The similarity above which two memories may mean the same (configured or calibrated)."""
    threshold = call.deps.settings.duplicate_similarity
    if threshold is None:
        threshold = calibration_for(call.deps.embedder.model).duplicate
    return threshold


def _nearest(
    call: FlowCall, scope: ServerScope | PersonalScope, embedding: list[float]
) -> list[CandidateRow]:
    """The scope's memories nearest to ``embedding`` (:data:`DUPLICATE_CANDIDATES`)."""
    return nearest(
        call.session,
        scope.visibility(),
        embedding,
        limit=DUPLICATE_CANDIDATES,
        sizes=call.deps.search_aids.sizes,
    )


def _duplicate(memory_id: int, shown: str, target: Person | None) -> FlowFailure:
    """The refusal of a memory that means the same as ``memory_id`` (shown as ``shown``)."""
    owner = {} if target is None else {"target_user": target.display_name}
    with_owner = "".join(f' and target_user "{name}"' for name in owner.values())
    return fail(
        S.DUPLICATE,
        f"This means the same as ID:{memory_id}, already saved: {quoted_data(shown)}. "
        "Nothing was saved. To change or add to it, call update_long_term_memory with "
        f"memory_id {memory_id}{with_owner} and the full new text; if it is a different "
        "fact, say what sets it apart (who, when, how much).",
        memory_id=memory_id,
        existing_content=as_data(shown),
        **owner,
    )


def _folded(text: str) -> str:
    """``text`` without differences of case or spacing."""
    return " ".join(text.casefold().split())
