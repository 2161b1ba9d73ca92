"""The per-turn graph for LangGraph Studio / ``langgraph dev`` (see ``langgraph.json``).

Compiled without a checkpointer: the LangGraph server brings its own. Short-term memory
lives in kioku's database (``KIOKU_DATABASE_URL``, or the embedded server). The model is
``ChatOpenAI`` when ``OPENAI_API_KEY`` is set, else a scripted model that echoes.
Runs need a ``context`` (a ``TurnContext`` as a dict) in Studio's context panel.
"""

from __future__ import annotations

from typing import Any

from langgraph.graph.state import CompiledStateGraph

from kioku.graphs.turn import build_graph
from kioku.models import openai_model_from_env
from kioku.store import KiokuStore
from kioku.testing import Script, ScriptedChatModel, echo


def make_graph() -> CompiledStateGraph[Any, Any, Any, Any]:
    """Open the store (applying migrations) and compile the graph without a checkpointer."""
    store = KiokuStore.open()
    store.setup()
    model = openai_model_from_env() or ScriptedChatModel(script=Script(fallback=echo))
    return build_graph(model, store, system_prompt="You are Kioku, a helpful assistant.")


graph = make_graph()
