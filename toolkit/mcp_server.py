"""``kioku mcp``: the memory tools over MCP (stdio, or streamable HTTP on loopback).

The scope — server, channel, persona, user — is fixed by the server's configuration; a
client (or the model behind it) never chooses it. Every tool answers with the same JSON
status objects as the LangChain tools.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import mcp.types as types
from mcp.server.lowlevel import Server
from sqlalchemy import select

from toolkit.context import Participant, Persona, TurnContext, server_key
from toolkit.db.models import Memory, PersonaRow
from toolkit.memory.create import create_long_term_memory
from toolkit.memory.create_typed import create_memory
from toolkit.memory.results import ToolResult
from toolkit.memory.update import update_long_term_memory
from toolkit.stm.store import ShortTermMemory
from toolkit.store import KiokuStore
from toolkit.tools.ltm import (
    CREATE_DESCRIPTION,
    CREATE_MEMORY_DESCRIPTION,
    CREATE_MEMORY_SCHEMA,
    CREATE_SCHEMA,
    UPDATE_DESCRIPTION,
    UPDATE_SCHEMA,
)
from toolkit.tools.search import DESCRIPTION as SEARCH_DESCRIPTION
from toolkit.tools.search import SCHEMA as SEARCH_SCHEMA
from toolkit.tools.search import render_hit, search_long_term_memory, visibility_for
from toolkit.tools.stm import DESCRIPTION as STM_DESCRIPTION
from toolkit.tools.stm import SCHEMA as STM_SCHEMA
from toolkit.tools.stm import update_short_term_memory

GET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"memory_id": {"type": "integer", "description": "The N of ID:N."}},
    "required": ["memory_id"],
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
    """Whether the client may write long-term memories (the server's self-teaching flag)."""


def persona_for(store: KiokuStore, scope: McpScope) -> Persona:
    """The scope's persona (created on first use; its lineage is kept across runs)."""
    with store.accounts() as accounts:
        accounts.upsert_server(
            scope.server_id, scope.server_name, self_teaching_enabled=scope.writable
        )
        row = accounts.session.scalar(
            select(PersonaRow).where(
                PersonaRow.server_id == server_key(scope.server_id),
                PersonaRow.name == scope.persona_name,
            )
        )
        if row is not None:
            return Persona(row.id, row.name, row.lineage_id)
        return accounts.create_persona(scope.server_id, scope.persona_name)


class KiokuMcp:
    """Dispatches MCP tool calls to kioku's flows inside the configured scope."""

    def __init__(self, store: KiokuStore, scope: McpScope) -> None:
        """Serve ``store`` for ``scope``."""
        self.store = store
        self.scope = scope
        self.persona = persona_for(store, scope)
        self.stm = ShortTermMemory(store, store.checkpointer())
        store.start_sweeper()
        user = Participant(scope.user_id, scope.user_name)
        self._user = user

    def context(self) -> TurnContext:
        """A fresh turn context per call (so per-turn limits apply per call)."""
        s = self.scope
        return TurnContext(
            server_id=s.server_id,
            server_name=s.server_name,
            channel_id=s.channel_id,
            channel_name=s.channel_id,
            user=self._user,
            participants=(self._user,),
            persona=self.persona,
            bot_user_id=s.bot_user_id,
            turn_id=uuid.uuid4().hex,
        )

    def tools(self) -> list[types.Tool]:
        """The tool list with the same model-facing schemas as the LangChain tools."""
        specs = [
            ("create_memory", CREATE_MEMORY_DESCRIPTION, CREATE_MEMORY_SCHEMA),
            ("search_long_term_memory", SEARCH_DESCRIPTION, SEARCH_SCHEMA),
            ("get_memory", "Get one memory by the N of its ID:N.", GET_SCHEMA),
            ("create_long_term_memory", CREATE_DESCRIPTION, CREATE_SCHEMA),
            ("update_long_term_memory", UPDATE_DESCRIPTION, UPDATE_SCHEMA),
            ("update_short_term_memory", STM_DESCRIPTION, STM_SCHEMA),
        ]
        return [types.Tool(name=n, description=d, inputSchema=s) for n, d, s in specs]

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Run one tool synchronously; always a status object."""
        context = self.context()
        flows: dict[str, Callable[..., ToolResult]] = {
            "create_memory": create_memory,
            "create_long_term_memory": create_long_term_memory,
            "update_long_term_memory": update_long_term_memory,
        }
        if name in flows:
            with self.store.sessions() as session:
                return flows[name](session, self.store, context, arguments).to_dict()
        if name == "update_short_term_memory":
            return update_short_term_memory(self.stm, context, {}, arguments).to_dict()
        if name == "search_long_term_memory":
            payload, artifact = search_long_term_memory(self.store, context, arguments)
            return {**payload, "records": artifact} if artifact else payload
        if name == "get_memory":
            return self._get(context, arguments.get("memory_id"))
        return {"status": "unknown_tool", "reason": f"No tool named {name!r}."}

    def _get(self, context: TurnContext, memory_id: object) -> dict[str, Any]:
        from toolkit.memory.arguments import ArgumentError, parse_memory_id
        from toolkit.search.engine import SearchHit

        try:
            wanted = parse_memory_id(memory_id)
        except ArgumentError as exc:
            return {"status": "get_failed_invalid_args", "reason": str(exc)}
        with self.store.sessions() as session:
            row = session.scalar(
                select(Memory).where(
                    Memory.id == wanted, visibility_for(session, context).condition()
                )
            )
            if row is None:
                return {
                    "status": "memory_not_found",
                    "reason": f"No memory ID:{wanted} in this scope.",
                }
            hit = SearchHit(
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
            )
            return {
                "status": "memory_found",
                "memory": render_hit(hit, context),
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


def build_server(app: KiokuMcp) -> Server[Any, Any]:
    """The MCP server; calls run in a worker thread so the event loop stays free."""
    server: Server[Any, Any] = Server("kioku")

    @server.list_tools()  # type: ignore[untyped-decorator, no-untyped-call]
    async def list_tools() -> list[types.Tool]:
        return app.tools()

    # Input is validated by kioku's flows, which answer with a status the model can act on.
    @server.call_tool(validate_input=False)  # type: ignore[untyped-decorator]
    async def call_tool(name: str, arguments: dict[str, Any]) -> list[types.TextContent]:
        result = await asyncio.to_thread(app.call, name, arguments)
        return [
            types.TextContent(type="text", text=json.dumps(result, ensure_ascii=False, default=str))
        ]

    return server


async def serve_stdio(app: KiokuMcp) -> None:
    """Serve over stdin/stdout."""
    from mcp.server.stdio import stdio_server

    server = build_server(app)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def serve_http(app: KiokuMcp, *, host: str = "127.0.0.1", port: int = 8765) -> None:
    """Serve streamable HTTP at ``http://host:port/mcp``."""
    import contextlib

    import uvicorn
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from starlette.applications import Starlette
    from starlette.routing import Mount

    manager = StreamableHTTPSessionManager(app=build_server(app), stateless=True)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> Any:
        async with manager.run():
            yield

    async def handle(scope: Any, receive: Any, send: Any) -> None:
        await manager.handle_request(scope, receive, send)

    starlette = Starlette(routes=[Mount("/mcp", app=handle)], lifespan=lifespan)
    uvicorn.run(starlette, host=host, port=port, log_level="warning")
