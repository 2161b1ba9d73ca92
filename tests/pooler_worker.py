"""A worker process for the pooler tests: ``setup``, or the README Quickstart agent.

The database is ``KIOKU_DATABASE_URL``'s, as in an application.
``python -m tests.pooler_worker setup`` runs ``store.setup()`` and prints what it did as
one JSON line. ``python -m tests.pooler_worker agent USER TURNS`` builds the
README Quickstart agent, prints ``ready``, waits for a line on stdin (so that several
workers run their turns at the same time), then runs ``TURNS`` turns (sync and async in
turn), each saving one fact about ``USER``, and a last one searching for every fact;
it prints the tool results as one JSON line. Warnings and errors go to stderr.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage, ToolMessage

from kioku import KiokuMemoryMiddleware, KiokuStore, TurnContext, memory_tools
from kioku.testing import Script, ScriptedChatModel, call_tool, say

FACTS = (
    "likes jasmine tea",
    "hikes in the alps",
    "plays the cello",
    "reads mystery novels",
    "bakes sourdough bread",
    "grows tomatoes",
    "watches silent films",
    "swims at dawn",
)
"""What each turn saves about its user, one fact a turn (distinct, so none is a duplicate)."""


def _setup() -> None:
    with KiokuStore.open() as store:
        print(json.dumps(store.setup()), flush=True)


def _turn(agent: Any, user: str, text: str, turn: int) -> list[Any]:
    """Run one turn (odd ones awaited); the results of the tools it called."""
    config = {"configurable": {"thread_id": f"{user}-chat"}}
    context = TurnContext.for_user(user, thread_id=f"{user}-chat")
    message = HumanMessage(text, id=f"{user}-turn-{turn}")
    if turn % 2:
        state = asyncio.run(agent.ainvoke({"messages": [message]}, config, context=context))
    else:
        state = agent.invoke({"messages": [message]}, config, context=context)
    ids = [m.id for m in state["messages"]]
    this_turn = state["messages"][ids.index(message.id) :] if message.id in ids else []
    return [json.loads(str(m.content)) for m in this_turn if isinstance(m, ToolMessage)]


def _agent(user: str, turns: int) -> None:
    store = KiokuStore.open()
    script = Script()
    agent = create_agent(
        ScriptedChatModel(script=script),
        tools=memory_tools(store),
        middleware=[KiokuMemoryMiddleware(store)],
        context_schema=TurnContext,
        checkpointer=store.checkpointer(),
    )
    print("ready", flush=True)
    sys.stdin.readline()
    saved: list[Any] = []
    for turn in range(turns):
        fact = FACTS[turn % len(FACTS)]
        script.add(
            call_tool(
                "create_long_term_memory",
                memory_content=f"{{user}} {fact}",
                memory_scope="target_user",
                target_user=user,
            ),
            say("Noted."),
        )
        saved += _turn(agent, user, f"Remember that I {fact}", turn)
    script.add(call_tool("search_long_term_memory", query=" ".join(FACTS)), say("Here."))
    found = _turn(agent, user, "What do you remember about me?", turns)
    print(json.dumps({"saved": saved, "found": found}), flush=True)
    store.close()


def main() -> None:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    if sys.argv[1] == "setup":
        _setup()
    else:
        _agent(sys.argv[2], int(sys.argv[3]))


if __name__ == "__main__":
    main()
