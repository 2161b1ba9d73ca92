"""The memory blocks of the context (SPEC §10): server-wide and personal memories."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from operator import attrgetter

from kioku._context import Participant, PrivacyLevel, TurnContext
from kioku._context_build.items import (
    PERSONAL_MEMORIES,
    SERVER_MEMORIES,
)
from kioku._context_build.render import (
    NOTE_RESERVE,
    MemoryLine,
    Names,
    Rendered,
    block_item,
    keep_newest,
    left_out,
)
from kioku._context_build.tokens import TokenCounter
from kioku._domain.records import MemoryRecord
from kioku._memory.rendering import DATA_NOTICE, server_memories_header
from kioku._memory.text import as_data


def _choose(lines: Sequence[MemoryLine], budget: int, priority: Sequence[int] | None) -> set[int]:
    """Ids of ``lines`` that fit in ``budget``, taken in ``priority`` order (else newest first)."""
    order = [line.memory.id for line in lines]
    costs = {line.memory.id: line.cost for line in lines}
    if priority is not None:
        ranked = [i for i in dict.fromkeys(priority) if i in costs]
        first = set(ranked)
        order = ranked + [i for i in order if i not in first]
    kept = keep_newest([costs[i] for i in order], budget)
    return set(order[:kept])


_NEWEST = attrgetter("memory.created_at", "memory.id")


def _newest_first(lines: Sequence[MemoryLine]) -> list[MemoryLine]:
    return sorted(lines, key=_NEWEST, reverse=True)


def merge_lines(*groups: Sequence[MemoryLine]) -> list[MemoryLine]:
    """The lines of every group (each newest first, no memory in two), newest first."""
    filled = [group for group in groups if group]
    if len(filled) <= 1:
        return list(filled[0]) if filled else []
    return _newest_first([line for group in filled for line in group])


def server_memory_lines(
    memories: Sequence[MemoryRecord], names: Names, counter: TokenCounter, now: datetime
) -> list[MemoryLine]:
    """Server memories as lines, newest first: rendered once per build, ranked as needed."""
    lines, today = [], now.astimezone(UTC).date()
    for m in memories:
        text, tokens = names.memory_line(m, "User", counter, today)
        lines.append(MemoryLine(m, "", text, tokens + 1))
    return _newest_first(lines)


def personal_memory_lines(
    participants: Sequence[Participant],
    memories_by_user: Mapping[str, Sequence[MemoryRecord]],
    names: Names,
    counter: TokenCounter,
    now: datetime,
) -> list[MemoryLine]:
    """Personal memories of the shown ``participants`` as lines, newest first.

    ``memories_by_user`` holds the people :mod:`kioku._reach` shows.
    """
    lines, today = [], now.astimezone(UTC).date()
    for person in participants:
        for m in memories_by_user.get(person.user_id, ()):
            text, tokens = names.memory_line(m, person.display_name, counter, today)
            lines.append(MemoryLine(m, person.user_id, text, tokens + 2))
    return _newest_first(lines)


def _server_header(context: TurnContext, names: Names) -> str:
    return (
        server_memories_header(names.bot, context.server_name, is_dm=context.is_dm)
        + "\n"
        + DATA_NOTICE
    )


def _server_room(context: TurnContext, names: Names, counter: TokenCounter, budget: int) -> int:
    return budget - counter(_server_header(context, names)) - NOTE_RESERVE


def _personal_room(participants: Sequence[Participant], counter: TokenCounter, budget: int) -> int:
    fixed = sum(counter(p.display_name) + 8 for p in participants) + NOTE_RESERVE
    return budget - fixed - counter(DATA_NOTICE)


def _omitted(lines: Sequence[MemoryLine], kept: set[int], total: int | None) -> int:
    return max(total or 0, len(lines)) - len(kept)


def server_memories_omitted(
    lines: Sequence[MemoryLine],
    context: TurnContext,
    names: Names,
    counter: TokenCounter,
    budget: int,
    *,
    total: int | None = None,
) -> int:
    """How many memories :func:`server_memories_stage` leaves out, without rendering it."""
    if not lines:
        return 0
    kept = _choose(lines, _server_room(context, names, counter, budget), None)
    return _omitted(lines, kept, total)


def server_memories_stage(
    lines: Sequence[MemoryLine],
    context: TurnContext,
    names: Names,
    counter: TokenCounter,
    budget: int,
    *,
    priority: Sequence[int] | None = None,
    total: int | None = None,
    searchable: bool = False,
) -> Rendered:
    """``## {bot}'s Memories about …`` then ``ID:N content`` lines, newest first.

    ``lines`` come from :func:`server_memory_lines`; ``total`` counts the scope's memories
    when they are only some of them.

    Over budget, the oldest are left out; with ``priority`` (ids, most relevant first) the
    least relevant are. The note says how many, and names the search tool when
    ``searchable`` (the turn offers it).
    """
    if not lines:
        return Rendered()
    kept = _choose(lines, _server_room(context, names, counter, budget), priority)
    chosen = [line for line in lines if line.memory.id in kept]
    shown = [[_server_header(context, names)], *([line.text] for line in chosen)]
    omitted = _omitted(lines, kept, total)
    if omitted:
        ranked = priority is not None
        shown.append(
            [left_out(omitted, "memory", "memories", ranked=ranked, searchable=searchable)]
        )
    return Rendered(
        (block_item("system", shown, SERVER_MEMORIES, counter),),
        omitted,
        memory_ids=tuple(line.memory.id for line in chosen),
    )


def visible_participants(context: TurnContext) -> list[Participant]:
    """Participants other than the bot, without FULL-privacy (invisible) people."""
    return [
        p
        for p in context.all_participants()
        if p.privacy != PrivacyLevel.FULL and p.user_id != context.bot_user_id
    ]


def personal_memories_omitted(
    participants: Sequence[Participant],
    lines: Sequence[MemoryLine],
    counter: TokenCounter,
    budget: int,
    *,
    total: int | None = None,
) -> int:
    """How many memories :func:`personal_memories_stage` leaves out, without rendering it."""
    if not participants:
        return 0
    kept = _choose(lines, _personal_room(participants, counter, budget), None)
    return _omitted(lines, kept, total)


def personal_memories_stage(
    participants: Sequence[Participant],
    lines: Sequence[MemoryLine],
    counter: TokenCounter,
    budget: int,
    *,
    priority: Sequence[int] | None = None,
    total: int | None = None,
    searchable: bool = False,
) -> Rendered:
    """Each participant, with ``- Memories: ID:12 …; ID:9 …`` for those it has memories of.

    ``lines`` come from :func:`personal_memory_lines`; ``total`` counts the shown people's
    memories when they are only some of them.

    Over budget, the oldest memories are left out, or the least relevant with ``priority``;
    the note names the search tool when ``searchable``.
    """
    if not participants:
        return Rendered()
    kept = _choose(lines, _personal_room(participants, counter, budget), priority)
    by_owner: dict[str, list[str]] = {}
    shown_ids: list[int] = []
    for line in lines:
        if line.memory.id in kept:
            by_owner.setdefault(line.owner, []).append(line.text)
            shown_ids.append(line.memory.id)
    texts = [["## Participants"], [DATA_NOTICE]]
    for person in participants:
        aliases = (
            f" (also known as {', '.join(as_data(a) for a in person.aliases)})"
            if person.aliases
            else ""
        )
        texts.append([f"{as_data(person.display_name)}{aliases}"])
        shown = by_owner.get(person.user_id)
        if shown:
            texts.append(["- Memories: " + shown[0], *shown[1:]])  # "; "-joined
    omitted = _omitted(lines, kept, total)
    if omitted:
        texts.append(
            [
                left_out(
                    omitted,
                    "personal memory",
                    "personal memories",
                    ranked=priority is not None,
                    searchable=searchable,
                )
            ]
        )
    return Rendered(
        (block_item("user", texts, PERSONAL_MEMORIES, counter),),
        omitted,
        memory_ids=tuple(shown_ids),
    )
