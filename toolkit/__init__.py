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
    from kioku.accounts import ServerSettings
    from kioku.config import KiokuSettings, load_settings
    from kioku.context import (
        DEFAULT_PERSONA,
        DEFAULT_SERVER_ID,
        AppContext,
        Participant,
        Persona,
        PrivacyLevel,
        TurnContext,
        turn_context_of,
    )
    from kioku.context_build.build import ContextBuilder
    from kioku.context_build.items import BuiltContext
    from kioku.context_build.render import ContextBudgets
    from kioku.errors import ConfigurationError, DatabaseUnavailableError
    from kioku.graphs.middleware import KiokuAgentState, KiokuMemoryMiddleware
    from kioku.graphs.state import TurnGraphState
    from kioku.graphs.turn import build_graph
    from kioku.intent import IntentGate
    from kioku.mcp_server import KiokuMcp, build_server
    from kioku.memory.directory import DatabaseUserDirectory, UserDirectory
    from kioku.memory.notices import NOTICE_STREAM_TYPE, MemoryNotice
    from kioku.memory.repository import PersonalScope, ServerScope
    from kioku.memory.resolution import DirectoryMember
    from kioku.memory.results import ToolResult
    from kioku.memory.statuses import CreateStatus, UpdateStatus
    from kioku.reach import Reach, reach_of
    from kioku.stm.model import StmEntry, StmKey, StmMessage
    from kioku.stm.store import ShortTermMemory
    from kioku.store import KiokuStore
    from kioku.tools.catalog import memory_tools
    from kioku.tools.invoke import ToolCallOutcome, arun_tool_call, run_tool_call
    from kioku.tools.ltm import (
        create_long_term_memory_tool,
        create_memory_tool,
        long_term_memory_tools,
        update_long_term_memory_tool,
    )
    from kioku.tools.search import search_long_term_memory_tool
    from kioku.tools.stm import update_short_term_memory_tool

__all__ = [
    "AppContext",
    "BuiltContext",
    "ConfigurationError",
    "ContextBudgets",
    "ContextBuilder",
    "CreateStatus",
    "DEFAULT_PERSONA",
    "DEFAULT_SERVER_ID",
    "DatabaseUnavailableError",
    "DatabaseUserDirectory",
    "DirectoryMember",
    "IntentGate",
    "KiokuAgentState",
    "KiokuMcp",
    "KiokuMemoryMiddleware",
    "KiokuSettings",
    "KiokuStore",
    "MemoryNotice",
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
    "UpdateStatus",
    "UserDirectory",
    "arun_tool_call",
    "build_graph",
    "build_server",
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
]

# Where each public name lives; kept in step with the TYPE_CHECKING imports above.
_LAZY: dict[str, str] = {
    "ServerSettings": "kioku.accounts",
    "KiokuSettings": "kioku.config",
    "load_settings": "kioku.config",
    "Participant": "kioku.context",
    "Persona": "kioku.context",
    "PrivacyLevel": "kioku.context",
    "TurnContext": "kioku.context",
    "ConfigurationError": "kioku.errors",
    "DatabaseUnavailableError": "kioku.errors",
    "DatabaseUserDirectory": "kioku.memory.directory",
    "UserDirectory": "kioku.memory.directory",
    "NOTICE_STREAM_TYPE": "kioku.memory.notices",
    "MemoryNotice": "kioku.memory.notices",
    "DirectoryMember": "kioku.memory.resolution",
    "ToolResult": "kioku.memory.results",
    "CreateStatus": "kioku.memory.statuses",
    "UpdateStatus": "kioku.memory.statuses",
    "Reach": "kioku.reach",
    "reach_of": "kioku.reach",
    "KiokuStore": "kioku.store",
    "ToolCallOutcome": "kioku.tools.invoke",
    "arun_tool_call": "kioku.tools.invoke",
    "run_tool_call": "kioku.tools.invoke",
    "create_long_term_memory_tool": "kioku.tools.ltm",
    "long_term_memory_tools": "kioku.tools.ltm",
    "update_long_term_memory_tool": "kioku.tools.ltm",
    "DEFAULT_PERSONA": "kioku.context",
    "DEFAULT_SERVER_ID": "kioku.context",
    "ContextBudgets": "kioku.context_build.render",
    "ContextBuilder": "kioku.context_build.build",
    "BuiltContext": "kioku.context_build.items",
    "IntentGate": "kioku.intent",
    "ShortTermMemory": "kioku.stm.store",
    "memory_tools": "kioku.tools.catalog",
    "create_memory_tool": "kioku.tools.ltm",
    "search_long_term_memory_tool": "kioku.tools.search",
    "update_short_term_memory_tool": "kioku.tools.stm",
    "build_graph": "kioku.graphs.turn",
    "TurnGraphState": "kioku.graphs.state",
    "KiokuMemoryMiddleware": "kioku.graphs.middleware",
    "KiokuAgentState": "kioku.graphs.middleware",
    "KiokuMcp": "kioku.mcp_server",
    "build_server": "kioku.mcp_server",
    "StmMessage": "kioku.stm.model",
    "AppContext": "kioku.context",
    "turn_context_of": "kioku.context",
    "PersonalScope": "kioku.memory.repository",
    "ServerScope": "kioku.memory.repository",
    "StmKey": "kioku.stm.model",
    "StmEntry": "kioku.stm.model",
}


__getattr__, __dir__ = lazy_exports(globals(), _LAZY)
