"""No kioku background thread touches the global ``random`` state after the call that started it.

Hypothesis compares that state around every draw and reports a change as "Do not use the
random module inside strategies" (an error under ``filterwarnings = error``): a thread
drawing from it at an arbitrary moment made the property tests fail now and then under
load. The checkpoint pool's worker draws each connection's expiry jitter from it
(``psycopg_pool``), so the pool is ready before ``checkpointer()`` returns.
"""

from __future__ import annotations

import random

from kioku import KiokuStore


def test_the_checkpoint_pool_draws_its_jitter_before_checkpointer_returns(
    store: KiokuStore,
) -> None:
    store.checkpointer()
    returned = random.getstate()
    pool = store._checkpoint_pool
    assert pool is not None and pool.get_stats()["pool_available"] == 1
    pool.wait(timeout=30)  # what used to still be under way in the pool's worker
    with pool.connection() as connection:
        connection.execute("SELECT 1")
    assert random.getstate() == returned
