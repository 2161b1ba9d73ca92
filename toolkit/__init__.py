"""kioku: memory for LangChain/LangGraph agents.

Long-term memories live in PostgreSQL + pgvector and are written by the model through
LangChain tools; the turn context reaches the tools through LangGraph's runtime.
"""

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
