"""A worker process writing memories in a loop while ``kioku reembed`` runs in another.

Arguments: the database URL, the persona's id and lineage, and a stop file. The worker
embeds with :data:`OLD` (the database's embedder when it starts) and, turn after turn,
saves a memory, sometimes updates one, saves a typed one or searches, through the tools.
It prints ``ready`` after its first turns; once the stop file exists it takes
:data:`TURNS_AFTER` more turns (after the re-embed returned), then prints one JSON line:
the statuses its tools answered and how many turns it took.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from kioku import KiokuSettings, KiokuStore, Participant, Persona, TurnContext
from kioku._embeddings import EmbedderSpec, HashingEmbeddings
from kioku._tools.invoke import run_tool_call
from kioku._tools.ltm import create_memory_tool, long_term_memory_tools
from kioku._tools.search import search_long_term_memory

READY_AFTER = 10
TURNS_AFTER = 12


class Reversed(HashingEmbeddings):
    """Another model of the same size: the hashing vectors, reversed."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [vector[::-1] for vector in super().embed_documents(texts)]

    def embed_query(self, text: str) -> list[float]:
        return super().embed_query(text)[::-1]


OLD = EmbedderSpec(Reversed(32), "reversed-32", 32)
"""The embedder the database records before the switch."""


def _context(persona_id: int, lineage: int) -> TurnContext:
    alice = Participant("u-alice", "Alice")
    return TurnContext(
        server_id="srv-a",
        server_name="Server A",
        channel_id="chan-1",
        user=alice,
        participants=(alice,),
        persona=Persona(persona_id, "Kioku", lineage),
        bot_user_id="bot-1",
    )


def main() -> None:
    url, persona_id, lineage, stop = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    settings = KiokuSettings(database_url=url, sweep_interval_minutes=0)
    store = KiokuStore.open(settings, embedder=OLD)
    context = _context(persona_id, lineage)
    tools = [*long_term_memory_tools(store), create_memory_tool(store)]

    def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        answer: dict[str, Any] = json.loads(
            str(run_tool_call(tools, name, arguments, context).message.content)
        )
        statuses[f"{name}: {answer['status']}"] += 1
        return answer

    statuses: Counter[str] = Counter()
    saved: list[int] = []
    turn, last = 0, None
    while last is None or turn < last:
        if last is None and Path(stop).exists():
            last = turn + TURNS_AFTER
        answer = call(
            "create_long_term_memory",
            {"memory_content": f"worker fact {turn}", "memory_scope": "server_wide"},
        )
        saved.extend([answer["memory_id"]] if "memory_id" in answer else [])
        if turn % 3 == 2 and len(saved) > 1:
            call(
                "update_long_term_memory",
                {"memory_id": saved[-2], "memory_content": f"worker fact {turn} revised"},
            )
        if turn % 4 == 1:
            call(
                "create_memory",
                {"memory_type": "semantic", "importance": 0.8, "memory_content": f"step {turn}"},
            )
        if turn % 4 == 3:
            found, _ = search_long_term_memory(store, context, {"query": f"worker fact {turn}"})
            statuses[f"search_long_term_memory: {found['status']}"] += 1
        turn += 1
        if turn == READY_AFTER:
            print("ready", flush=True)
    print(json.dumps({"statuses": statuses, "turns": turn}), flush=True)
    store.close()


if __name__ == "__main__":
    main()
