"""What the context stages share: budgets, rendered blocks, names, memory lines, items.

The stages themselves are pure functions from data to items:
:mod:`kioku._context_build.render_memories` (the memory blocks) and
:mod:`kioku._context_build.render_stm` (short-term memory).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import ClassVar, NamedTuple

from kioku._context import TurnContext
from kioku._context_build.items import (
    ContextItem,
    Role,
)
from kioku._context_build.mentions import convert_mentions
from kioku._context_build.tokens import TokenCounter, count_block
from kioku._domain.records import MemoryRecord
from kioku._memory.text import as_data
from kioku._memory.when import label_on

RECENT_MESSAGES_SHOWN = 5
"""Messages shown for an other-channel entry without a summary."""


@dataclass(frozen=True)
class ContextBudgets:
    """Token budget per memory block; over budget, the oldest items are dropped first."""

    server_memories: int = 2000
    personal_memories: int = 2000
    stm_other_channels: int = 800
    stm_same_channel: int = 800


@dataclass(frozen=True)
class Rendered:
    """What one stage contributes."""

    items: tuple[ContextItem, ...] = ()
    omitted: int = 0
    tail_directive: ContextItem | None = None
    memory_ids: tuple[int, ...] = ()
    """Ids of the long-term memories the items show (their accesses are counted)."""


@dataclass(frozen=True)
class Names:
    """How people are named in rendered text."""

    bot: str
    by_id: Mapping[str, str] = field(default_factory=dict)
    _lines: dict[tuple[str, str], str] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    """Texts rendered with these names (a stage may render its memories twice)."""
    _memory_lines: dict[tuple[int, str, str, datetime, date], tuple[str, int]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    """``ID:N`` lines and their token counts, kept while these names are reused."""
    _line_sets: dict[Hashable, tuple[Sequence[MemoryRecord], list[MemoryLine]]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    """Rendered lines, kept with the very record list they were rendered from."""

    MAX_CACHED: ClassVar[int] = 4096
    """Cached texts and lines per :class:`Names`, each (all dropped when it is exceeded):
    the windows of a server and a few people."""
    MAX_LINE_SETS: ClassVar[int] = 64
    """Blocks' lines kept per :class:`Names` (all dropped when it is exceeded)."""

    def cached_texts(self) -> int:
        """Texts and memory lines kept."""
        return len(self._lines) + len(self._memory_lines)

    def lines_of(
        self,
        key: Hashable,
        source: Sequence[MemoryRecord],
        render: Callable[[], list[MemoryLine]],
    ) -> list[MemoryLine]:
        """``render()``, or the lines it gave for ``key`` from this very ``source``.

        ``source`` is compared by identity: a cached memory window keeps its record list
        while the scope is unchanged and gets a new one when it is reloaded, so lines
        rendered from it stay right exactly as long as it is reused. The lines must not be
        changed by the caller.
        """
        found = self._line_sets.get(key)
        if found is not None and found[0] is source:
            return found[1]
        lines = render()
        if len(self._line_sets) >= self.MAX_LINE_SETS:
            self._line_sets.clear()
        self._line_sets[key] = (source, lines)
        return lines

    def key(self) -> tuple[str, tuple[tuple[str, str], ...]]:
        """What rendering depends on: equal keys render every text alike."""
        return self.bot, tuple(sorted(self.by_id.items()))

    @staticmethod
    def of(context: TurnContext) -> Names:
        """Names of the turn's participants, and the persona for the bot."""
        by_id = {p.user_id: as_data(p.display_name) for p in context.all_participants()}
        by_id[context.bot_user_id] = as_data(context.persona.name)
        return Names(as_data(context.persona.name), by_id)

    def text(self, content: str, *, user_name: str) -> str:
        """Stored text with tokens and mentions rendered, as one line of data."""
        key = (content, user_name)
        line = self._lines.get(key)
        if line is None:
            if len(self._lines) >= self.MAX_CACHED:
                self._lines.clear()
            line = self._lines[key] = as_data(
                convert_mentions(
                    content, user_name=user_name, bot_name=self.bot, names_by_id=self.by_id
                )
            )
        return line

    def memory_line(
        self, memory: MemoryRecord, user_name: str, counter: TokenCounter, today: date
    ) -> tuple[str, int]:
        """``ID:N (when) text`` of ``memory`` and its tokens (``counter`` must not vary).

        ``today``: the UTC date the "when" is relative to.
        """
        key = (memory.id, memory.content, user_name, memory.happened_at, today)
        found = self._memory_lines.get(key)
        if found is None:
            if len(self._memory_lines) >= self.MAX_CACHED:
                self._memory_lines.clear()
            when = label_on(memory.happened_at, today)
            text = f"ID:{memory.id} ({when}) {self.text(memory.content, user_name=user_name)}"
            found = self._memory_lines[key] = (text, counter(text))
        return found


def text_item(role: Role, text: str, tag: str, counter: TokenCounter) -> ContextItem:
    return ContextItem(role, text, tag, counter(text))


def block_item(
    role: Role, lines: Sequence[Sequence[str]], tag: str, counter: TokenCounter
) -> ContextItem:
    """An item of ``lines`` (each "; "-joined segments), counted by :func:`count_block`."""
    text, tokens = count_block(lines, counter)
    return ContextItem(role, text, tag, tokens)


def keep_newest(costs: Sequence[int], budget: int) -> int:
    """How many of the items (newest first) fit in ``budget`` tokens."""
    used = 0
    for kept, cost in enumerate(costs):
        used += cost
        if used > budget:
            return kept
    return len(costs)


NOTE_RESERVE = 24
"""Tokens kept free in a block for its "(N … not shown)" note."""


def left_out(count: int, one: str, many: str, *, ranked: bool, searchable: bool) -> str:
    """The note of a block over budget: how many are left out, and what finds them.

    ``ranked``: the shown ones were chosen by relevance (else the newest were kept);
    ``searchable``: the turn offers the search tool, so the note names it.
    """
    what = one if count == 1 else many
    note = f"({count} {'more' if ranked else 'older'} {what} not shown"
    return note + ("; search_long_term_memory can find them)" if searchable else ")")


class MemoryLine(NamedTuple):
    """One memory as a block shows it: ``ID:N text`` and what it costs in tokens."""

    memory: MemoryRecord
    owner: str
    """The person it is about (personal memories); ``""`` for server memories."""
    text: str
    cost: int
    """Tokens of ``text`` and its separator."""
