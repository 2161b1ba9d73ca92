"""Evidence reaching the prompt (issue #15): kioku's context build vs plain cosine, same room.

For every LoCoMo dev question (the protocol of :mod:`bench.locomo`: each conversation in its
own scope, one memory per turn), kioku's :class:`~kioku.ContextBuilder` builds the turn's
context with the question as the user's message and the default budgets; the server
memories block holds what fits. Counted: the share of the question's evidence turns whose
memory is in that block, and the block's tokens. The peer fills the same number of tokens
with memory lines (rendered alike) in plain cosine order.

Run: ``.venv/bin/python -m bench.evidence [--data …] [--budget N] [--embedder …]`` (MiniLM by
default, which needs ``.[local]``; ``--embedder multilingual`` or ``hashing`` as in
:mod:`bench.locomo`).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from langchain_core.messages import HumanMessage
from sqlalchemy import select

from bench.common import SHOWN_MEMORY_ID, bench_database, open_store, read_samples
from bench.locomo import embedder_named
from bench.locomo_data import DEFAULT_DATA, LINEAGE, evidence_ids, load_conversation
from kioku import ContextBudgets, ContextBuilder, Participant, TurnContext
from kioku._context import Persona
from kioku._context_build.tokens import TiktokenCounter
from kioku._db.models import Memory
from kioku._embeddings import embedding_text
from kioku._memory.when import when_label
from kioku._search.query import scope_condition

ASKER = Participant("locomo-asker", "Asker")


def main() -> None:
    """Build each question's context and count the evidence in it."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, required=DEFAULT_DATA is None)
    parser.add_argument(
        "--budget",
        type=int,
        default=ContextBudgets().server_memories,
        help="server memories budget in tokens (default: kioku's)",
    )
    parser.add_argument("--embedder", choices=("local", "hashing", "multilingual"), default="local")
    args = parser.parse_args()
    embedder = embedder_named(args.embedder)
    samples = read_samples(args.data)
    counter = TiktokenCounter()
    shares: dict[str, list[float]] = {"kioku": [], "cosine": []}
    tokens: list[int] = []
    started = time.perf_counter()
    with bench_database("kioku_bench_evidence") as url:
        store = open_store(url, embedder)
        builder = ContextBuilder(
            store, budgets=ContextBudgets(server_memories=args.budget), counter=counter
        )
        for sample in samples:
            loaded = load_conversation(store, sample)
            known = set(loaded.dia_ids.values())
            context = TurnContext(
                server_id=loaded.scope.server_key,
                server_name=loaded.scope.server_key,
                channel_id="questions",
                channel_name="questions",
                user=ASKER,
                persona=Persona(1, "Kioku", LINEAGE),
                bot_user_id="locomo-bot",
                participants=(ASKER,),
            )
            with store.sessions() as session:
                rows = {
                    row.id: row
                    for row in session.scalars(select(Memory).where(scope_condition(loaded.scope)))
                }
            for qa in sample["qa"]:
                category = int(qa.get("category", 0))
                evidence = set(evidence_ids(qa.get("evidence", []), known))
                if category not in (1, 2, 3, 4) or not evidence:
                    continue
                built = builder.build(
                    context, [HumanMessage(f"Asker: {qa['question']}")], now=loaded.now
                )
                block = next(i for i in built.items if i.tag == "server_memories")
                shown = {loaded.dia_ids[int(m)] for m in SHOWN_MEMORY_ID.findall(block.text)}
                shares["kioku"].append(len(shown & evidence) / len(evidence))
                tokens.append(block.tokens)
                vector = embedder.embeddings.embed_query(embedding_text(qa["question"]))
                with store.sessions() as session:
                    order = session.scalars(
                        select(Memory.id)
                        .where(scope_condition(loaded.scope))
                        .order_by(Memory.embedding.cosine_distance(vector) + 0)
                    ).all()
                room, used, peer = block.tokens, 0, set()
                for memory_id in order:
                    row = rows[memory_id]
                    line = f"ID:{row.id} ({when_label(row.created_at, loaded.now)}) {row.content}"
                    used += counter(line) + 1
                    if used > room:
                        break
                    peer.add(loaded.dia_ids[memory_id])
                shares["cosine"].append(len(peer & evidence) / len(evidence))
        store.close()
    count = len(tokens)
    print(
        f"LoCoMo dev, {count} questions, {time.perf_counter() - started:.0f} s, "
        f"server memories budget {args.budget}, load {os.getloadavg()[0]:.2f}"
    )
    print(f"memory tokens per turn: mean {sum(tokens) / count:.0f}, max {max(tokens)}")
    for name, values in shares.items():
        print(f"evidence in the prompt, {name:<7}: {sum(values) / count:.3f}")


if __name__ == "__main__":
    main()
