"""Write throughput of kioku's tool path beside PostgresStore's puts (:mod:`bench.search`).

kioku's ``create_long_term_memory`` (validation, settings, the limit check under an advisory
lock, insert + history; embedding excluded) with and without its HNSW index, beside
``PostgresStore.put`` on the matching peer, in alternating rounds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from langgraph.store.postgres import PostgresStore
from sqlalchemy import text

from bench.rounds import Rounds
from kioku import KiokuStore, Participant, Persona, TurnContext
from kioku._db.vectors import HNSW_INDEXES
from kioku._memory.create import create_long_term_memory


def write_rounds(
    store: KiokuStore,
    flat: PostgresStore,
    hnsw_peer: PostgresStore,
    writes: list[str],
    per_round: int,
    persona: Persona,
) -> tuple[dict[str, float], dict[str, float]]:
    """Tool-path writes with and without kioku's HNSW index, beside the matching peer.

    The writes go to two servers of their own, as ``persona``.
    """
    with store.accounts() as accounts:
        for name in ("w-hnsw", "w-exact"):
            accounts.upsert_server(name, "writes", self_teaching_enabled=True)
    pending = iter(writes)
    peer_keys = iter(range(10**9))

    def peer_put(peer: PostgresStore) -> Callable[[], object]:
        def put() -> None:
            key = next(peer_keys)
            peer.put(("writes",), f"w{key}", {"text": writes[key % len(writes)]})

        return put

    with_index = Rounds.run(
        {"kioku": tool_write(store, "w-hnsw", persona, pending), "peer": peer_put(hnsw_peer)},
        per_round,
    )
    with store.engine.begin() as connection:
        for index in HNSW_INDEXES.values():  # what limits <= 2,000 give you
            connection.execute(text(f"DROP INDEX IF EXISTS {index}"))
    without_index = Rounds.run(
        {"kioku": tool_write(store, "w-exact", persona, pending), "peer": peer_put(flat)}, per_round
    )
    return {
        "kioku_tool_path_with_hnsw": with_index.per_second("kioku"),
        "kioku_tool_path_without_hnsw": without_index.per_second("kioku"),
    }, {
        "postgres_store_hnsw_put": with_index.per_second("peer"),
        "postgres_store_flat_put": without_index.per_second("peer"),
    }


def tool_write(
    store: KiokuStore, server: str, persona: Persona, pending: Iterator[str]
) -> Callable[[], object]:
    """One server-wide memory created in ``server`` through the tool path, per call."""
    user = Participant("bench-user", "Bench")
    context = TurnContext(
        server_id=server,
        channel_id="c",
        user=user,
        persona=persona,
        bot_user_id="b",
        participants=(user,),
    )

    def write() -> None:
        with store.sessions() as session:
            result = create_long_term_memory(
                session,
                store,
                context,
                {"memory_content": next(pending), "memory_scope": "server_wide"},
            )
        assert result.status == "memory_saved_successfully", result

    return write
