"""A second OS process on the test database, driven by JSON lines on stdin.

Each request names a turn (``user``, ``lineage``) and an action: ``build`` (the rendered
memory blocks), ``search`` (the search tool's payload) or ``update`` (the update tool's
result). Each answer is one JSON line on stdout.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from langchain_core.messages import HumanMessage

from kioku import KiokuSettings, KiokuStore, Participant, Persona, TurnContext
from kioku._context_build.build import ContextBuilder
from kioku._tools.invoke import run_tool_call
from kioku._tools.ltm import update_long_term_memory_tool
from kioku._tools.search import search_long_term_memory


def _context(request: dict[str, Any]) -> TurnContext:
    alice, bob = Participant("u-alice", "Alice"), Participant("u-bob", "Bob")
    return TurnContext(
        server_id="srv-a",
        server_name="Server A",
        channel_id="chan-1",
        user=alice,
        participants=(alice, bob),
        persona=Persona(1, "Kioku", int(request["lineage"])),
        bot_user_id="bot-1",
    )


def main() -> None:
    store = KiokuStore.open(KiokuSettings(database_url=sys.argv[1], sweep_interval_minutes=0))
    builder = ContextBuilder(store)
    tool = update_long_term_memory_tool(store)
    for line in sys.stdin:
        request = json.loads(line)
        context = _context(request)
        answer: Any
        if request["action"] == "build":
            built = builder.build(context, [HumanMessage(request.get("query", "hello"))])
            answer = " ".join(item.text for item in built.items)
        elif request["action"] == "search":
            answer, _ = search_long_term_memory(store, context, {"query": request["query"]})
        else:
            outcome = run_tool_call([tool], tool.name, request["arguments"], context)
            answer = json.loads(str(outcome.message.content))
        print(json.dumps(answer), flush=True)
    store.close()


if __name__ == "__main__":
    main()
