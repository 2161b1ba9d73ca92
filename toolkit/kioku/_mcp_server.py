"""``kioku mcp``: the memory tools over MCP (stdio, or streamable HTTP) on the SDK's FastMCP.

The scope — server, channel, persona, user — is fixed by the server's configuration; a
client (or the model behind it) never chooses it. Every tool answers with the same JSON
status objects as the LangChain tools, as the text of a ``CallToolResult`` whose
``isError`` is set for every status but a success (:data:`SUCCESS_STATUSES`).

Starting writes nothing to the database. A writable instance registers its server and
persona on its first write (a new server with self-teaching on; an existing one keeps its
settings, which decide whether long-term memories may be written); a read-only instance
refuses every write and never creates them. Over HTTP, every request must carry the
bearer token, and its Host and Origin headers must name this server (DNS rebinding).
"""

from __future__ import annotations

import contextlib
import json
import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any

import mcp.types as types
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from mcp.server.fastmcp import FastMCP
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import ConfigDict, Field
from sqlalchemy import select

from kioku._accounts import AccountRepository
from kioku._awaiting import off_loop
from kioku._context import Participant, Persona, TurnContext, check_user_space
from kioku._db.errors import StorageError, storage_errors
from kioku._db.models import Memory
from kioku._domain.statuses import CreateStatus, GetStatus, SearchStatus, StmStatus, UpdateStatus
from kioku._mcp_finite import non_finite_in, notice_non_finite
from kioku._memory.arguments import ArgumentError, MemoryId, ToolArguments, validated
from kioku._memory.create import create_long_term_memory
from kioku._memory.create_typed import create_memory
from kioku._memory.flow import Flow
from kioku._memory.results import ToolResult
from kioku._memory.text import echo
from kioku._memory.update import update_long_term_memory
from kioku._search.access import not_counted
from kioku._search.query import scope_condition
from kioku._search.rows import SearchHit
from kioku._stm.model import utc_now
from kioku._stm.store import ShortTermMemory
from kioku._store import KiokuStore
from kioku._tools.catalog import (
    CREATE_LTM,
    CREATE_TYPED,
    SEARCH_LTM,
    UPDATE_LTM,
    UPDATE_STM,
    memory_tools,
)
from kioku._tools.schema import model_facing_schema
from kioku._tools.search import (
    parse_search_args,
    render_hit,
    search_long_term_memory,
    visibility_for,
)
from kioku._tools.stm import update_short_term_memory

logger = logging.getLogger(__name__)


class GetArgs(ToolArguments):
    """Validated arguments of ``get_memory`` (only MCP has it)."""

    model_config = ConfigDict(title="get_memory")

    memory_id: Annotated[MemoryId, Field(description="The N of ID:N.")]


UNKNOWN_TOOL = "unknown_tool"
"""Status of a call naming a tool this server does not have."""
INTERNAL_ERROR = "internal_error"
"""Status of a call that failed unexpectedly outside the tools' own error handling."""

SUCCESS_STATUSES: frozenset[str] = frozenset(
    {
        CreateStatus.SAVED,
        UpdateStatus.UPDATED,
        UpdateStatus.DELETED,
        SearchStatus.FOUND,
        SearchStatus.NONE,
        GetStatus.FOUND,
        StmStatus.UPDATED,
    }
)
"""Statuses of a call that did what it was asked; every other status is a failure."""

READ_ONLY_REASON = (
    "This memory server is read-only: memories and conversation summaries cannot be "
    "saved, changed or deleted through it. Nothing was changed; do not retry."
)
NO_PERSONA_REASON = "Nothing has been remembered for this persona yet."


def is_success(status: object) -> bool:
    """Whether a tool's ``status`` reports success (``isError`` is false only then)."""
    return status in SUCCESS_STATUSES


@dataclass(frozen=True, slots=True)
class McpRules:
    """What the MCP server answers for one tool besides the tool's own statuses."""

    db_error: str
    """Status when the database fails before the tool's own flow runs."""
    invalid_args: str
    """Status of arguments the SDK would hide from the tool (NaN, Infinity)."""
    read_only_refusal: str | None = None
    """Status refusing the call on a read-only instance; ``None`` for tools that only read."""


GET_MEMORY = "get_memory"
GET_DESCRIPTION = "Get one memory by the N of its ID:N."
RULES: dict[str, McpRules] = {
    CREATE_TYPED: McpRules(CreateStatus.DB_ERROR, CreateStatus.INVALID_ARGS, CreateStatus.DISABLED),
    SEARCH_LTM: McpRules(SearchStatus.DB_ERROR, SearchStatus.INVALID_ARGS),
    GET_MEMORY: McpRules(GetStatus.DB_ERROR, GetStatus.INVALID_ARGS),
    CREATE_LTM: McpRules(CreateStatus.DB_ERROR, CreateStatus.INVALID_ARGS, CreateStatus.DISABLED),
    UPDATE_LTM: McpRules(UpdateStatus.DB_ERROR, UpdateStatus.INVALID_ARGS, UpdateStatus.DISABLED),
    UPDATE_STM: McpRules(StmStatus.DB_ERROR, StmStatus.INVALID_ARGS, StmStatus.REFUSED),
}
"""Every tool, in the order they are listed; a read-only instance lists only the tools
without a ``read_only_refusal`` (it still answers a call of another with that refusal).
Names, descriptions and argument schemas come from the LangChain tools
(:func:`kioku.memory_tools`), except for ``get_memory``, which only MCP has."""


def mcp_tool(tool: BaseTool) -> types.Tool:
    """A LangChain tool as MCP lists it: its name, description and model-facing schema."""
    function = convert_to_openai_tool(tool)["function"]
    return types.Tool(
        name=function["name"],
        description=function.get("description", ""),
        inputSchema=function["parameters"],
    )


FLOWS: dict[str, Flow] = {
    CREATE_TYPED: create_memory,
    CREATE_LTM: create_long_term_memory,
    UPDATE_LTM: update_long_term_memory,
}


@dataclass(frozen=True)
class McpScope:
    """Where the MCP client's memories live (set by whoever starts the server)."""

    server_id: str = "mcp"
    server_name: str = "MCP"
    channel_id: str = "mcp"
    user_id: str = "mcp-user"
    user_name: str = "User"
    persona_name: str = "Assistant"
    bot_user_id: str = "mcp-bot"
    writable: bool = True
    """``False`` (``--read-only``) refuses every write. ``True`` allows short-term summaries;
    long-term writes also need the server's ``self_teaching_enabled`` setting."""

    def __post_init__(self) -> None:
        """Refuse, before serving, a scope no call could run in."""
        check_user_space(self.server_id, self.user_id)


class KiokuMcp:
    """Dispatches MCP tool calls to kioku's flows inside the configured scope."""

    def __init__(self, store: KiokuStore, scope: McpScope) -> None:
        """Serve ``store`` for ``scope``; reads nothing from and writes nothing to the database."""
        self.store = store
        self.scope = scope
        self.stm = ShortTermMemory(store)
        self._user = Participant(scope.user_id, scope.user_name)
        listed = {tool.name: mcp_tool(tool) for tool in memory_tools(store, self.stm)}
        listed[GET_MEMORY] = types.Tool(
            name=GET_MEMORY, description=GET_DESCRIPTION, inputSchema=model_facing_schema(GetArgs)
        )
        readers = [name for name, rules in RULES.items() if rules.read_only_refusal is None]
        self._listed = [listed[name] for name in (RULES if scope.writable else readers)]
        if scope.writable:  # the sweeper deletes expired rows: a read-only instance does not
            store.start_sweeper()

    def context(self, persona: Persona) -> TurnContext:
        """A fresh turn context per call (so per-turn limits apply per call)."""
        s = self.scope
        return TurnContext(
            server_id=s.server_id,
            server_name=s.server_name,
            channel_id=s.channel_id,
            channel_name=s.channel_id,
            user=self._user,
            participants=(self._user,),
            persona=persona,
            bot_user_id=s.bot_user_id,
            turn_id=uuid.uuid4().hex,
        )

    def tools(self) -> list[types.Tool]:
        """The tools this instance runs (the readers alone when read-only), as MCP lists them."""
        return list(self._listed)

    def call(
        self, name: str, arguments: Mapping[str, Any], *, non_finite: str | None = None
    ) -> dict[str, Any]:
        """Run one tool synchronously; always a status object.

        ``non_finite`` says where the request held NaN or Infinity (``importance is NaN``,
        which the SDK hands on as ``null``): the call is then refused as invalid.
        """
        rules = RULES.get(name)
        if rules is None:
            return {"status": UNKNOWN_TOOL, "reason": f"No tool named '{echo(name)}'."}
        if rules.read_only_refusal is not None and not self.scope.writable:
            return ToolResult(rules.read_only_refusal, READ_ONLY_REASON).to_dict()
        if non_finite is not None:
            return ToolResult(
                rules.invalid_args,
                f"{echo(non_finite)}: JSON numbers must be finite. Nothing was changed.",
            ).to_dict()
        # A read-only instance does not count what its searches return either.
        counted = contextlib.nullcontext() if self.scope.writable else not_counted()
        try:
            with storage_errors(name), counted:
                return self._run(name, dict(arguments))
        except StorageError as exc:
            return ToolResult(
                rules.db_error, f"The memory database is unavailable ({exc}). Nothing was changed."
            ).to_dict()

    def _run(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        if name == SEARCH_LTM:
            return self._search(arguments)
        if name == GET_MEMORY:
            return self._get(arguments)
        context = self.context(self._writable_persona())
        if name == UPDATE_STM:
            return update_short_term_memory(self.stm, context, {}, arguments).to_dict()
        with self.store.sessions() as session:
            return FLOWS[name](session, self.store, context, arguments).to_dict()

    def _persona(self) -> Persona | None:
        """The scope's persona, or ``None`` while nothing was written for it."""
        with self.store.reads() as session:
            return AccountRepository(session).find_persona(
                self.scope.server_id, self.scope.persona_name
            )

    def _writable_persona(self) -> Persona:
        """The scope's persona, registering it (and its server, if new) on the first write."""
        s = self.scope
        with self.store.accounts() as accounts:
            found = accounts.find_persona(s.server_id, s.persona_name)
            if found is not None:
                return found
            # As `kioku mcp` always did, a server it registers lets the client write; an
            # existing server keeps its settings (change them with `kioku server-settings`).
            accounts.add_server(s.server_id, s.server_name, self_teaching_enabled=True)
            return accounts.ensure_persona(s.server_id, s.persona_name)

    def _search(self, arguments: dict[str, Any]) -> dict[str, Any]:
        persona = self._persona()
        if persona is None:
            try:
                parse_search_args(arguments)
            except ArgumentError as exc:
                return ToolResult(SearchStatus.INVALID_ARGS, str(exc)).to_dict()
            return ToolResult(SearchStatus.NONE, NO_PERSONA_REASON).to_dict()
        payload, artifact = search_long_term_memory(self.store, self.context(persona), arguments)
        return {**payload, "records": artifact} if artifact else payload

    def _get(self, arguments: dict[str, Any]) -> dict[str, Any]:
        try:
            wanted = validated(GetArgs, arguments).memory_id
        except ArgumentError as exc:
            return ToolResult(GetStatus.INVALID_ARGS, str(exc)).to_dict()
        not_found = ToolResult(GetStatus.NOT_FOUND, f"No memory ID:{wanted} in this scope.")
        persona = self._persona()
        if persona is None:
            return not_found.to_dict()
        context = self.context(persona)
        with self.store.reads() as session:
            row = session.scalar(
                select(Memory).where(
                    Memory.id == wanted, scope_condition(visibility_for(session, context))
                )
            )
            if row is None:
                return not_found.to_dict()
            return {
                "status": GetStatus.FOUND,
                "memory": render_hit(_hit(row), context, utc_now()),
                "record": {
                    "id": row.id,
                    "memory_type": row.memory_type,
                    "content": row.content,
                    "importance": row.importance,
                    "decay_rate": row.decay_rate,
                    "attributes": row.attributes,
                    "created_at": row.created_at.isoformat(),
                    "updated_at": row.updated_at.isoformat(),
                },
            }


def _hit(row: Memory) -> SearchHit:
    return SearchHit(
        row.id,
        row.scope,
        row.server_id,
        row.user_id,
        row.memory_type,
        row.content,
        row.importance,
        0.0,
        row.created_at,
        0.0,
        None,
        None,
        row.happened_at,
    )


def call_result(result: Mapping[str, Any]) -> types.CallToolResult:
    """The MCP result of a tool's status object: its JSON as text, ``isError`` unless a success."""
    text = json.dumps(result, ensure_ascii=False, default=str)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        isError=not is_success(result.get("status")),
    )


class KiokuServer(FastMCP[Any]):
    """FastMCP serving kioku's tools: FastMCP's transports, kioku's tool list and calls.

    FastMCP's own tools validate arguments against a function's signature and report a
    failure (or an unknown tool) as ``Error executing tool …`` text; kioku's contract is a
    status object with a reason for any input, from the same validation as the LangChain
    tools. So the two handlers FastMCP installs for tools are answered by :class:`KiokuMcp`.
    """

    def __init__(self, app: KiokuMcp, **settings: Any) -> None:
        """Serve ``app``; ``settings`` are FastMCP's (e.g. ``transport_security``)."""
        super().__init__("kioku", log_level="WARNING", **settings)
        self.app = app
        notice_non_finite(self._mcp_server)

    async def list_tools(self) -> list[types.Tool]:
        """The tool list: the LangChain tools' names, descriptions and schemas."""
        return self.app.tools()

    # The low-level handler FastMCP registers takes a CallToolResult too: only it can carry
    # isError with kioku's status text.
    async def call_tool(  # type: ignore[override]
        self, name: str, arguments: dict[str, Any]
    ) -> types.CallToolResult:
        """Run one tool in a worker thread (the event loop stays free); always a status."""
        try:
            result = await off_loop(
                self.app.call, name, arguments, non_finite=non_finite_in(self._mcp_server)
            )
        except Exception:  # the exception's text is not for the client
            logger.exception("kioku: unexpected error in MCP tool %s", name)
            result = {"status": INTERNAL_ERROR, "reason": "An internal error occurred."}
        return call_result(result)


def build_server(
    app: KiokuMcp, *, transport_security: TransportSecuritySettings | None = None
) -> FastMCP[Any]:
    """The MCP server (the SDK's ``FastMCP``) for ``app``, stateless over HTTP at ``/mcp``.

    Args:
        app: the dispatcher of the tool calls.
        transport_security: the Host and Origin allow-lists of streamable HTTP.

    Returns:
        A server to run over stdio (``run_stdio_async``) or mount over streamable HTTP
        (``streamable_http_app``).
    """
    return KiokuServer(
        app, stateless_http=True, streamable_http_path="/mcp", transport_security=transport_security
    )


async def serve_stdio(app: KiokuMcp) -> None:
    """Serve over stdin/stdout."""
    await build_server(app).run_stdio_async()
