"""Evidence and answers reaching the prompt (issues #15, #38): kioku's context vs cosine.

For every LoCoMo dev question (the protocol of :mod:`bench.locomo`: each conversation in its
own scope, one memory per turn), kioku's :class:`~kioku.ContextBuilder` builds the turn's
context with the question as the user's message and the default budgets; the server
memories block holds what fits. Counted per question category: the share of the
question's evidence turns whose memory is in that block, the block's tokens, and the
model-free answer check (:func:`bench.answer_scoring.answer_in_context`): whether the
context the model would get holds the gold answer, normalised. The peer fills the same
number of tokens with memory lines (rendered alike) in plain cosine order.

Run: ``.venv/bin/python -m bench.evidence [--data …] [--budget N] [--embedder …]`` (MiniLM by
default, which needs ``.[local]``; ``--embedder multilingual`` or ``hashing`` as in
:mod:`bench.locomo`).
"""

from __future__ import annotations

import argparse
import os
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage
from sqlalchemy import select

from bench.answer_scoring import answer_in_context
from bench.common import SHOWN_MEMORY_ID, bench_database, open_store, read_samples
from bench.corpus import embedder_named
from bench.locomo_data import (
    DEFAULT_DATA,
    LINEAGE,
    LoadedConversation,
    evidence_ids,
    load_conversation,
)
from kioku import ContextBudgets, ContextBuilder, KiokuStore, Participant, TurnContext
from kioku._context import Persona
from kioku._context_build.tokens import TiktokenCounter
from kioku._db.models import Memory
from kioku._embeddings import EmbedderSpec, embedding_text
from kioku._memory.when import when_label
from kioku._search.query import scope_condition

ASKER = Participant("locomo-asker", "Asker")
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


@dataclass(frozen=True)
class Asked:
    """What one question's context held, for kioku and for the cosine peer."""

    category: int
    tokens: int
    evidence: dict[str, float]
    """Share of the evidence turns in the memory block, per contender."""
    answer: dict[str, float]
    """Share of the gold answer held by the context, per contender."""


@dataclass
class Room:
    """One conversation loaded into its scope, and what the questions need of it."""

    store: KiokuStore
    builder: ContextBuilder
    embedder: EmbedderSpec
    counter: TiktokenCounter
    loaded: LoadedConversation
    rows: dict[int, Memory]

    def context(self) -> TurnContext:
        """The asker's turn in the conversation's server."""
        return TurnContext(
            server_id=self.loaded.scope.server_key,
            server_name=self.loaded.scope.server_key,
            channel_id="questions",
            channel_name="questions",
            user=ASKER,
            persona=Persona(1, "Kioku", LINEAGE),
            bot_user_id="locomo-bot",
            participants=(ASKER,),
        )

    def ask(self, qa: dict[str, Any], category: int, evidence: set[str]) -> Asked:
        """Build the question's context; the cosine peer fills the same room."""
        built = self.builder.build(
            self.context(), [HumanMessage(f"Asker: {qa['question']}")], now=self.loaded.now
        )
        block = next(i for i in built.items if i.tag == "server_memories")
        shown = {self.loaded.dia_ids[int(m)] for m in SHOWN_MEMORY_ID.findall(block.text)}
        peer_ids, peer_text = self._cosine_block(qa["question"], block.tokens)
        kioku_text = "\n".join(item.text for item in built.items)
        return Asked(
            category,
            block.tokens,
            {
                "kioku": len(shown & evidence) / len(evidence),
                "cosine": len(peer_ids & evidence) / len(evidence),
            },
            {
                "kioku": answer_in_context(kioku_text, qa["answer"], category),
                "cosine": answer_in_context(peer_text, qa["answer"], category),
            },
        )

    def _cosine_block(self, question: str, room: int) -> tuple[set[str], str]:
        """The dialogue ids and text of memory lines in cosine order that fit ``room``."""
        vector = self.embedder.embeddings.embed_query(embedding_text(question))
        with self.store.sessions() as session:
            order = session.scalars(
                select(Memory.id)
                .where(scope_condition(self.loaded.scope))
                .order_by(Memory.embedding.cosine_distance(vector) + 0)
            ).all()
        used, ids, lines = 0, set(), []
        for memory_id in order:
            row = self.rows[memory_id]
            line = f"ID:{row.id} ({when_label(row.created_at, self.loaded.now)}) {row.content}"
            used += self.counter(line) + 1
            if used > room:
                break
            ids.add(self.loaded.dia_ids[memory_id])
            lines.append(line)
        return ids, "\n".join(lines)


def _conversation(
    store: KiokuStore,
    builder: ContextBuilder,
    embedder: EmbedderSpec,
    counter: TiktokenCounter,
    sample: dict[str, Any],
) -> list[Asked]:
    """Load one conversation and ask its questions of categories 1–4 with evidence."""
    loaded = load_conversation(store, sample)
    with store.sessions() as session:
        rows = {
            row.id: row
            for row in session.scalars(select(Memory).where(scope_condition(loaded.scope)))
        }
    room = Room(store, builder, embedder, counter, loaded, rows)
    known = set(loaded.dia_ids.values())
    asked = []
    for qa in sample["qa"]:
        category = int(qa.get("category", 0))
        evidence = set(evidence_ids(qa.get("evidence", []), known))
        if category in CATEGORIES and evidence:
            asked.append(room.ask(qa, category, evidence))
    return asked


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def report(asked: list[Asked]) -> list[str]:
    """Lines: tokens, then evidence and answer shares per contender, overall and by category."""
    tokens = [a.tokens for a in asked]
    lines = [
        f"memory tokens per turn: mean {_mean([float(t) for t in tokens]):.0f}, max {max(tokens)}"
    ]
    by_category: dict[str, list[Asked]] = defaultdict(list)
    for a in asked:
        by_category[CATEGORIES[a.category]].append(a)
    lines.append(f"{'':<13} {'questions':>9}  evidence kioku/cosine  answer kioku/cosine")
    for name, group in [("all", asked), *sorted(by_category.items())]:
        evidence = [_mean([a.evidence[c] for a in group]) for c in ("kioku", "cosine")]
        answer = [_mean([a.answer[c] for a in group]) for c in ("kioku", "cosine")]
        lines.append(
            f"{name:<13} {len(group):>9}  {evidence[0]:>14.3f}/{evidence[1]:.3f}  "
            f"{answer[0]:>12.3f}/{answer[1]:.3f}"
        )
    return lines


def main(argv: list[str] | None = None) -> None:
    """Build each question's context and count the evidence and answers in it."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, required=DEFAULT_DATA is None)
    parser.add_argument(
        "--budget",
        type=int,
        default=ContextBudgets().server_memories,
        help="server memories budget in tokens (default: kioku's)",
    )
    parser.add_argument("--embedder", choices=("local", "hashing", "multilingual"), default="local")
    args = parser.parse_args(argv)
    embedder = embedder_named(args.embedder)
    counter = TiktokenCounter()
    started = time.perf_counter()
    asked: list[Asked] = []
    with bench_database("kioku_bench_evidence") as url:
        store = open_store(url, embedder)
        builder = ContextBuilder(
            store, budgets=ContextBudgets(server_memories=args.budget), counter=counter
        )
        for sample in read_samples(args.data):
            asked += _conversation(store, builder, embedder, counter, sample)
        store.close()
    print(
        f"LoCoMo dev, {len(asked)} questions, {time.perf_counter() - started:.0f} s, "
        f"{embedder.model}, server memories budget {args.budget}, "
        f"load {os.getloadavg()[0]:.2f}"
    )
    print("\n".join(report(asked)))


if __name__ == "__main__":
    main()
