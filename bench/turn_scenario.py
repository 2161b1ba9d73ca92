"""The per-turn benchmark's scenario: one server's memories, in kioku and PostgresStore alike.

Five participants with 100 personal memories each, the server's memories, and short-term
memory in a number of channels (10 messages each, every other one summarised), loaded
into kioku's tables and into a PostgresStore the same way (:mod:`bench.turn` times both).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.store.base import PutOp
from langgraph.store.postgres import PostgresStore
from sqlalchemy import insert, text

from bench.common import open_store, seed_accounts
from bench.corpus import DIM, Lookup, sentences
from kioku import KiokuStore, Participant, Persona, TurnContext
from kioku._context_build.build import ContextBuilder
from kioku._db.engine import libpq_url
from kioku._db.models import Memory
from kioku._embeddings import EmbedderSpec, HashingEmbeddings
from kioku._intent import IntentGate
from kioku._memory.update import update_long_term_memory
from kioku._stm.model import StmMessage, utc_now
from kioku._stm.store import ShortTermMemory

SERVER = "bench-server"
PERSONAL_PER_USER = 100
PARTICIPANTS = tuple(Participant(f"user-{i}", f"User {i}") for i in range(5))
QUESTIONS = [
    "what tea does the shop serve on fridays?",
    "remind me what User 1 likes to cook",
    "do you remember the hiking plans?",
    "which books were recommended last week?",
]


@dataclass
class Scenario:
    """One server's memories, loaded into kioku and into PostgresStore alike."""

    store: KiokuStore
    stm: ShortTermMemory
    peer: PostgresStore
    context: TurnContext
    updatable: list[int]
    """Memory ids the tool call of each turn updates in turn."""
    resources: ExitStack
    server_texts: list[str]
    personal_texts: dict[str, list[str]]

    def close(self) -> None:
        """Close the peer's connection and the store."""
        self.resources.close()
        self.store.close()


def channel_context(base: TurnContext, channel: str, speaker: Participant) -> TurnContext:
    """The same server and persona in another channel."""
    return TurnContext(
        server_id=base.server_id,
        server_name=base.server_name,
        channel_id=channel,
        channel_name=channel,
        user=speaker,
        persona=base.persona,
        bot_user_id=base.bot_user_id,
        participants=base.participants,
    )


def build_scenario(
    url: str, server_memories: int, channels: int, vectors: dict[str, list[float]]
) -> Scenario:
    """Load the memories and ``channels`` channels of short-term memory into both stores."""
    hashing = HashingEmbeddings(DIM)
    lookup = EmbedderSpec(Lookup(vectors, hashing), f"hashing-{DIM}", DIM)
    # Loaded without the HNSW index; setup() below builds it when the limits call for it.
    store = open_store(
        url, lookup, max_server_memories=max(server_memories, 100), vector_index="exact"
    )
    texts = sentences(PERSONAL_PER_USER * len(PARTICIPANTS) + server_memories)
    server_texts, personal_texts = texts[:server_memories], texts[server_memories:]
    for t in texts:
        vectors.setdefault(t, hashing.embed_query(t))
    persona = seed_accounts(store, SERVER, "Bench", PARTICIPANTS)
    rows = memory_rows(server_texts, personal_texts, persona.lineage_id, vectors)
    updatable = load_memories(store, rows)
    store.settings = store.settings.model_copy(update={"vector_index": "auto"})
    store.setup()  # the HNSW index, when the limits allow scopes beyond exact search

    stm = ShortTermMemory(store, store.checkpointer())
    context = current_context(persona)
    resources = ExitStack()
    peer = resources.enter_context(
        PostgresStore.from_conn_string(
            libpq_url(store.engine),
            index={"dims": DIM, "embed": lookup.embeddings, "fields": ["text"]},
        )
    )
    load_postgres_store(peer, server_texts, personal_texts)
    seed_channels(stm, peer, context, channels)
    personal_by_user = {
        p.user_id: personal_texts[k :: len(PARTICIPANTS)] for k, p in enumerate(PARTICIPANTS)
    }
    return Scenario(store, stm, peer, context, updatable, resources, server_texts, personal_by_user)


def current_context(persona: Persona) -> TurnContext:
    """The first participant speaking in channel ``current`` of the bench server."""
    return TurnContext(
        server_id=SERVER,
        server_name="Bench",
        channel_id="current",
        channel_name="current",
        user=PARTICIPANTS[0],
        persona=persona,
        bot_user_id="bench-bot",
        participants=PARTICIPANTS,
    )


def memory_rows(
    server_texts: Sequence[str],
    personal_texts: Sequence[str],
    lineage_id: int,
    vectors: dict[str, list[float]],
) -> list[dict[str, Any]]:
    """Kioku's ``memories`` rows of the scenario (personal texts dealt to each participant)."""
    server = [{"scope": "server", "server_id": SERVER, "content": t} for t in server_texts]
    personal = [
        {"scope": "personal", "user_id": PARTICIPANTS[i % len(PARTICIPANTS)].user_id, "content": t}
        for i, t in enumerate(personal_texts)
    ]
    return [
        {**row, "persona_lineage_id": lineage_id, "embedding": vectors[row["content"]]}
        for row in server + personal
    ]


def load_memories(store: KiokuStore, rows: list[dict[str, Any]]) -> list[int]:
    """``rows`` inserted in bulk and analysed; the first participant's first 20 memories."""
    with store.transaction() as session:
        for start in range(0, len(rows), 5000):
            session.execute(insert(Memory), rows[start : start + 5000])
        updatable = list(
            session.scalars(
                text(
                    "SELECT id FROM memories WHERE scope = 'personal' AND user_id = :u "
                    "ORDER BY id LIMIT 20"
                ),
                {"u": PARTICIPANTS[0].user_id},
            )
        )
    autocommit = store.engine.execution_options(isolation_level="AUTOCOMMIT")
    with autocommit.connect() as connection:
        connection.execute(text("VACUUM ANALYZE memories"))
    return updatable


def load_postgres_store(
    peer: PostgresStore, server_texts: list[str], personal_texts: list[str]
) -> None:
    """The same memories into PostgresStore (one namespace per server and per person)."""
    peer.setup()
    ops = [PutOp(("memories", SERVER), f"s{i}", {"text": t}) for i, t in enumerate(server_texts)]
    ops += [
        PutOp(("memories", PARTICIPANTS[i % len(PARTICIPANTS)].user_id), f"p{i}", {"text": t})
        for i, t in enumerate(personal_texts)
    ]
    for start in range(0, len(ops), 1000):
        peer.batch(ops[start : start + 1000])


def seed_stm(
    stm: ShortTermMemory, context: TurnContext, channels: int
) -> list[tuple[str, list[StmMessage], str | None]]:
    """Ten messages in ``channels`` channels and the current one; what each channel got.

    Every other channel is summarised too. Returns each channel's name, messages, summary.
    """
    start = stm.clock()
    seeded: list[tuple[str, list[StmMessage], str | None]] = []
    for c in range(channels + 1):
        channel = "current" if c == channels else f"channel-{c}"
        speaker = PARTICIPANTS[c % len(PARTICIPANTS)]
        messages = [
            StmMessage(
                "user" if i % 2 == 0 else "assistant",
                speaker.display_name if i % 2 == 0 else "Kioku",
                f"message {i} in {channel}",
                start + timedelta(seconds=i),
            )
            for i in range(10)
        ]
        turn = channel_context(context, channel, speaker)
        stm.capture(turn, messages)
        summary = None
        if c % 2 == 0:
            summary = f"Summary of {channel}: people are discussing tea and hobbies."
            stm.write_summary(turn, summary)
        seeded.append((channel, messages, summary))
    return seeded


def seed_channels(
    stm: ShortTermMemory, peer: PostgresStore, context: TurnContext, channels: int
) -> None:
    """:func:`seed_stm`, and the same entries in PostgresStore."""
    for channel, messages, summary in seed_stm(stm, context, channels):
        entry = {"messages": [m.to_dict() for m in messages], "summary": summary}
        peer.put(("stm", SERVER), channel, entry, index=False)


def kioku_turn(
    store: KiokuStore,
    stm: ShortTermMemory,
    context: TurnContext,
    updatable: list[int],
    vectors: dict[str, list[float]],
) -> Callable[[int], None]:
    """Kioku's turn ``i``: intent gate, context build, one update through the tool, capture."""
    gate, builder = IntentGate(), ContextBuilder(store, stm)
    hashing = HashingEmbeddings(DIM)
    rng = random.Random(5)
    contents = [f"{{user}} asked about topic {rng.randrange(10**6)}" for _ in range(1000)]
    for sentence in [*QUESTIONS, *contents]:
        vectors.setdefault(sentence, hashing.embed_query(sentence))  # embedding is not timed

    def turn(i: int) -> None:
        question = QUESTIONS[i % len(QUESTIONS)]
        dialogue = [HumanMessage(question, name=context.user.display_name)]
        intent = gate.detect(question)
        built = builder.build(context, dialogue, ltm_intent=intent)
        assert not built.failed_stages, built.failed_stages
        with store.sessions() as session:
            result = update_long_term_memory(
                session,
                store,
                context,
                {
                    "memory_id": updatable[i % len(updatable)],
                    "memory_content": contents[i % len(contents)],
                    "target_user": context.user.display_name,
                },
            )
        assert result.status == "memory_updated_successfully", result
        reply = AIMessage("Here is what I remember.")
        stm.capture(
            context,
            [
                StmMessage("user", context.user.display_name, question, utc_now()),
                StmMessage("assistant", "Kioku", str(reply.content), utc_now()),
            ],
        )

    return turn
