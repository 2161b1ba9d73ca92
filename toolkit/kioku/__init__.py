"""kioku: memory for LangChain/LangGraph agents.

Long-term memories live in PostgreSQL + pgvector and are written by the model through
LangChain tools; the turn context reaches the tools through LangGraph's runtime.

The public names below are resolved lazily (PEP 562): ``import kioku`` (and so every
``toolkit.*`` submodule, the ``kioku`` command included) stays cheap, and LangChain,
LangGraph, SQLAlchemy and friends load on the first use of a name that needs them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kioku._lazy import lazy_exports

if TYPE_CHECKING:
    from kioku._app_context import AppContext
    from kioku._config import KiokuSettings, load_settings
    from kioku._consolidation.plan import ConsolidationPlan
    from kioku._consolidation.prompt import CONSOLIDATION_PROMPT
    from kioku._consolidation.report import ConsolidationReport
    from kioku._consolidation.saved import SavedPlan
    from kioku._consolidation.scope import consolidation_context
    from kioku._context import (
        DEFAULT_PERSONA,
        Participant,
        Persona,
        PrivacyLevel,
        TurnContext,
        turn_context_of,
        user_space,
    )
    from kioku._context_build.build import ContextBuilder
    from kioku._context_build.items import BuiltContext, ContextItem
    from kioku._context_build.render import ContextBudgets
    from kioku._domain.scopes import PersonalScope, ServerScope
    from kioku._domain.settings import ServerSettings
    from kioku._domain.statuses import CreateStatus, UpdateStatus
    from kioku._embeddings import EmbedderSpec, HashingEmbeddings
    from kioku._errors import (
        ConfigurationError,
        DatabaseUnavailableError,
        ItemRefusedError,
        ModelCallError,
    )
    from kioku._intent import IntentGate
    from kioku._lgstore.store import KiokuLangGraphStore
    from kioku._mcp_server import KiokuMcp, build_server
    from kioku._memory.directory import DatabaseUserDirectory, UserDirectory
    from kioku._memory.notices import NOTICE_STREAM_TYPE, MemoryNotice
    from kioku._memory.resolution import DirectoryMember
    from kioku._memory.results import ToolResult
    from kioku._reach import Reach, reach_of
    from kioku._stm.model import StmEntry, StmKey, StmMessage
    from kioku._stm.store import ShortTermMemory
    from kioku._store import KiokuStore
    from kioku._tools.catalog import memory_tools
    from kioku._tools.invoke import ToolCallOutcome, arun_tool_call, run_tool_call
    from kioku._tools.ltm import (
        create_long_term_memory_tool,
        create_memory_tool,
        long_term_memory_tools,
        update_long_term_memory_tool,
    )
    from kioku._tools.search import search_long_term_memory_tool
    from kioku._tools.stm import update_short_term_memory_tool
    from kioku.graphs._middleware import KiokuAgentState, KiokuMemoryMiddleware
    from kioku.graphs._options import TurnOptions
    from kioku.graphs._state import TurnGraphState
    from kioku.graphs._turn import build_graph

__all__ = [
    "AppContext",
    "BuiltContext",
    "CONSOLIDATION_PROMPT",
    "ConfigurationError",
    "ConsolidationPlan",
    "ConsolidationReport",
    "SavedPlan",
    "ContextBudgets",
    "ContextBuilder",
    "ContextItem",
    "CreateStatus",
    "DEFAULT_PERSONA",
    "DatabaseUnavailableError",
    "DatabaseUserDirectory",
    "DirectoryMember",
    "EmbedderSpec",
    "HashingEmbeddings",
    "IntentGate",
    "ItemRefusedError",
    "KiokuAgentState",
    "KiokuLangGraphStore",
    "KiokuMcp",
    "KiokuMemoryMiddleware",
    "KiokuSettings",
    "KiokuStore",
    "MemoryNotice",
    "ModelCallError",
    "NOTICE_STREAM_TYPE",
    "Participant",
    "Persona",
    "PersonalScope",
    "PrivacyLevel",
    "Reach",
    "ServerScope",
    "ServerSettings",
    "ShortTermMemory",
    "StmEntry",
    "StmKey",
    "StmMessage",
    "ToolCallOutcome",
    "ToolResult",
    "TurnContext",
    "TurnGraphState",
    "TurnOptions",
    "UpdateStatus",
    "UserDirectory",
    "arun_tool_call",
    "build_graph",
    "build_server",
    "consolidation_context",
    "create_long_term_memory_tool",
    "create_memory_tool",
    "load_settings",
    "long_term_memory_tools",
    "memory_tools",
    "reach_of",
    "run_tool_call",
    "search_long_term_memory_tool",
    "turn_context_of",
    "update_long_term_memory_tool",
    "update_short_term_memory_tool",
    "user_space",
]

# Where each public name lives; kept in step with the TYPE_CHECKING imports above.
_LAZY: dict[str, str] = {
    "ServerSettings": "kioku._domain.settings",
    "KiokuSettings": "kioku._config",
    "load_settings": "kioku._config",
    "Participant": "kioku._context",
    "Persona": "kioku._context",
    "PrivacyLevel": "kioku._context",
    "TurnContext": "kioku._context",
    "ConfigurationError": "kioku._errors",
    "DatabaseUnavailableError": "kioku._errors",
    "ItemRefusedError": "kioku._errors",
    "ModelCallError": "kioku._errors",
    "DatabaseUserDirectory": "kioku._memory.directory",
    "UserDirectory": "kioku._memory.directory",
    "NOTICE_STREAM_TYPE": "kioku._memory.notices",
    "MemoryNotice": "kioku._memory.notices",
    "DirectoryMember": "kioku._memory.resolution",
    "ToolResult": "kioku._memory.results",
    "CreateStatus": "kioku._domain.statuses",
    "UpdateStatus": "kioku._domain.statuses",
    "Reach": "kioku._reach",
    "reach_of": "kioku._reach",
    "KiokuStore": "kioku._store",
    "KiokuLangGraphStore": "kioku._lgstore.store",
    "ToolCallOutcome": "kioku._tools.invoke",
    "arun_tool_call": "kioku._tools.invoke",
    "run_tool_call": "kioku._tools.invoke",
    "create_long_term_memory_tool": "kioku._tools.ltm",
    "long_term_memory_tools": "kioku._tools.ltm",
    "update_long_term_memory_tool": "kioku._tools.ltm",
    "DEFAULT_PERSONA": "kioku._context",
    "user_space": "kioku._context",
    "ContextBudgets": "kioku._context_build.render",
    "ContextBuilder": "kioku._context_build.build",
    "BuiltContext": "kioku._context_build.items",
    "IntentGate": "kioku._intent",
    "ShortTermMemory": "kioku._stm.store",
    "memory_tools": "kioku._tools.catalog",
    "create_memory_tool": "kioku._tools.ltm",
    "search_long_term_memory_tool": "kioku._tools.search",
    "update_short_term_memory_tool": "kioku._tools.stm",
    "build_graph": "kioku.graphs._turn",
    "TurnGraphState": "kioku.graphs._state",
    "TurnOptions": "kioku.graphs._options",
    "KiokuMemoryMiddleware": "kioku.graphs._middleware",
    "KiokuAgentState": "kioku.graphs._middleware",
    "KiokuMcp": "kioku._mcp_server",
    "build_server": "kioku._mcp_server",
    "StmMessage": "kioku._stm.model",
    "AppContext": "kioku._app_context",
    "turn_context_of": "kioku._context",
    "PersonalScope": "kioku._domain.scopes",
    "ServerScope": "kioku._domain.scopes",
    "StmKey": "kioku._stm.model",
    "StmEntry": "kioku._stm.model",
    "EmbedderSpec": "kioku._embeddings",
    "HashingEmbeddings": "kioku._embeddings",
    "ContextItem": "kioku._context_build.items",
    "CONSOLIDATION_PROMPT": "kioku._consolidation.prompt",
    "ConsolidationPlan": "kioku._consolidation.plan",
    "ConsolidationReport": "kioku._consolidation.report",
    "SavedPlan": "kioku._consolidation.saved",
    "consolidation_context": "kioku._consolidation.scope",
}


__getattr__, __dir__ = lazy_exports(globals(), _LAZY)
