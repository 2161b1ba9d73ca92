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
    from kioku.context import Participant, Persona, PrivacyLevel, TurnContext
    from kioku.errors import ConfigurationError, DatabaseUnavailableError
    from kioku.memory.directory import DatabaseUserDirectory, UserDirectory
    from kioku.memory.notices import NOTICE_STREAM_TYPE, MemoryNotice
    from kioku.memory.resolution import DirectoryMember
    from kioku.memory.results import ToolResult
    from kioku.memory.statuses import CreateStatus, UpdateStatus
    from kioku.reach import Reach, reach_of
    from kioku.store import KiokuStore
    from kioku.tools.invoke import ToolCallOutcome, arun_tool_call, run_tool_call
    from kioku.tools.ltm import (
        create_long_term_memory_tool,
        long_term_memory_tools,
        update_long_term_memory_tool,
    )

__all__ = [
    "NOTICE_STREAM_TYPE",
    "ConfigurationError",
    "CreateStatus",
    "DatabaseUnavailableError",
    "DatabaseUserDirectory",
    "DirectoryMember",
    "KiokuSettings",
    "KiokuStore",
    "MemoryNotice",
    "Participant",
    "Persona",
    "PrivacyLevel",
    "Reach",
    "ServerSettings",
    "ToolCallOutcome",
    "ToolResult",
    "TurnContext",
    "UpdateStatus",
    "UserDirectory",
    "arun_tool_call",
    "create_long_term_memory_tool",
    "load_settings",
    "long_term_memory_tools",
    "reach_of",
    "run_tool_call",
    "update_long_term_memory_tool",
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
}


__getattr__, __dir__ = lazy_exports(globals(), _LAZY)
