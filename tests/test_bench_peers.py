"""The per-turn benchmark's peers (``bench.peers``) run their turns on a real database.

A smoke test: nothing is timed or compared, but a change to the bench that breaks a peer
(or what it renders) fails here rather than in the next ``python -m bench`` run.
"""

from __future__ import annotations

from bench.peers import measure, synthetic_data


def test_the_raw_floors_and_the_store_peer_run_their_turns(fresh_database: str) -> None:
    report = measure(
        synthetic_data(fresh_database, 20),
        which=("postgres_store_flat", "raw_sql_floor", "raw_sql_vector_floor"),
        turns=5,
    )

    peers = report["peers"]
    assert report["skipped"] == {}
    assert set(peers) == {"postgres_store_flat", "raw_sql_floor", "raw_sql_vector_floor"}
    for name, figures in peers.items():
        assert figures["found"] > 0, name  # memories rendered into the prompt
        assert figures["round_trips"] >= 1, name  # counted through the proxy
