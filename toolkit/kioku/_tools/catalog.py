"""All of kioku's tools at once, and their names."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kioku._context import NO_STM_PROVIDERS

if TYPE_CHECKING:
    from langchain_core.tools import StructuredTool

    from kioku._stm.store import ShortTermMemory
    from kioku._store import KiokuStore

CREATE_LTM = "create_long_term_memory"
UPDATE_LTM = "update_long_term_memory"
CREATE_TYPED = "create_memory"
SEARCH_LTM = "search_long_term_memory"
UPDATE_STM = "update_short_term_memory"

LONG_TERM_WRITES = frozenset({CREATE_LTM, UPDATE_LTM, CREATE_TYPED})
"""Tools offered whenever the turn allows tools (SPEC §9)."""
TOOL_NAMES = frozenset({*LONG_TERM_WRITES, SEARCH_LTM, UPDATE_STM})
"""Every tool :func:`memory_tools` returns."""


def memory_tools(
    store: KiokuStore,
    stm: ShortTermMemory | None = None,
    *,
    no_stm_providers: frozenset[str] = NO_STM_PROVIDERS,
) -> list[StructuredTool]:
    """The five memory tools, ready for ``create_agent``, a ``ToolNode`` or a model.

    Args:
        store: the kioku store.
        stm: short-term memory for ``update_short_term_memory``; the store's own
            (:meth:`KiokuStore.short_term_memory`) by default, which is also the
            middleware's default.
        no_stm_providers: providers that cannot use the short-term-memory tool.

    Returns:
        ``create_long_term_memory``, ``update_long_term_memory``, ``create_memory``,
        ``search_long_term_memory`` and ``update_short_term_memory``.
    """
    from kioku._tools.ltm import create_memory_tool, long_term_memory_tools
    from kioku._tools.search import search_long_term_memory_tool
    from kioku._tools.stm import update_short_term_memory_tool

    return [
        *long_term_memory_tools(store),
        create_memory_tool(store),
        search_long_term_memory_tool(store),
        update_short_term_memory_tool(
            stm or store.short_term_memory(), no_stm_providers=no_stm_providers
        ),
    ]
