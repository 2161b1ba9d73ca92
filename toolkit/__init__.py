"""kioku: memory for LangChain/LangGraph agents.

Long-term memories live in PostgreSQL + pgvector and are written by the model through
LangChain tools; the turn context reaches the tools through LangGraph's runtime.

The public names below are resolved lazily (PEP 562): ``import toolkit`` (and so every
``toolkit.*`` submodule, the ``kioku`` command included) stays cheap, and LangChain,
LangGraph, SQLAlchemy and friends load on the first use of a name that needs them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolkit._lazy import lazy_exports

if TYPE_CHECKING:
    from toolkit.accounts import ServerSettings
    from toolkit.config import KiokuSettings, load_settings
    from toolkit.context import Participant, Persona, PrivacyLevel, TurnContext
    from toolkit.errors import ConfigurationError, DatabaseUnavailableError
    from toolkit.memory.directory import DatabaseUserDirectory, UserDirectory
    from toolkit.memory.notices import NOTICE_STREAM_TYPE, MemoryNotice
    from toolkit.memory.resolution import DirectoryMember
    from toolkit.memory.results import ToolResult
    from toolkit.memory.statuses import CreateStatus, UpdateStatus
    from toolkit.reach import Reach, reach_of
    from toolkit.store import KiokuStore
    from toolkit.tools.invoke import ToolCallOutcome, arun_tool_call, run_tool_call
    from toolkit.tools.ltm import (
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
    "ServerSettings": "toolkit.accounts",
    "KiokuSettings": "toolkit.config",
    "load_settings": "toolkit.config",
    "Participant": "toolkit.context",
    "Persona": "toolkit.context",
    "PrivacyLevel": "toolkit.context",
    "TurnContext": "toolkit.context",
    "ConfigurationError": "toolkit.errors",
    "DatabaseUnavailableError": "toolkit.errors",
    "DatabaseUserDirectory": "toolkit.memory.directory",
    "UserDirectory": "toolkit.memory.directory",
    "NOTICE_STREAM_TYPE": "toolkit.memory.notices",
    "MemoryNotice": "toolkit.memory.notices",
    "DirectoryMember": "toolkit.memory.resolution",
    "ToolResult": "toolkit.memory.results",
    "CreateStatus": "toolkit.memory.statuses",
    "UpdateStatus": "toolkit.memory.statuses",
    "Reach": "toolkit.reach",
    "reach_of": "toolkit.reach",
    "KiokuStore": "toolkit.store",
    "ToolCallOutcome": "toolkit.tools.invoke",
    "arun_tool_call": "toolkit.tools.invoke",
    "run_tool_call": "toolkit.tools.invoke",
    "create_long_term_memory_tool": "toolkit.tools.ltm",
    "long_term_memory_tools": "toolkit.tools.ltm",
    "update_long_term_memory_tool": "toolkit.tools.ltm",
}


__getattr__, __dir__ = lazy_exports(globals(), _LAZY)
