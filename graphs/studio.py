"""The per-turn graph for LangGraph Studio / ``langgraph dev`` (see ``langgraph.json``).

Compiled without a checkpointer: the LangGraph server brings its own. Short-term memory
lives in kioku's database (``KIOKU_DATABASE_URL``, or the embedded server, stopped when
the server exits). The context is an :class:`~kioku.AppContext`, which Studio shows as a
form with defaults (a run without one is the user ``studio-user`` in the run's thread).
The model is ``ChatOpenAI`` when ``OPENAI_API_KEY`` is set; without a key, a scripted
model that saves, forgets and lists memories when asked ("remember that I like tea",
"forget tea", "what do you remember?") and otherwise echoes.
"""

from __future__ import annotations

from typing import Any

from langgraph.graph.state import CompiledStateGraph

from kioku._app_context import AppContext
from kioku._models import openai_model_from_env
from kioku._store import KiokuStore
from kioku.graphs._turn import build_graph
from kioku.testing import Script, ScriptedChatModel, memory_commands

SYSTEM_PROMPT = "You are Kioku, a helpful assistant."


def make_graph() -> CompiledStateGraph[Any, Any, Any, Any]:
    """Open the store (applying migrations) and compile the graph without a checkpointer."""
    store = KiokuStore.open()
    store.setup()
    model = openai_model_from_env() or ScriptedChatModel(script=Script(fallback=memory_commands))
    return build_graph(model, store, system_prompt=SYSTEM_PROMPT, context_schema=AppContext)


graph = make_graph()
