"""Per-turn counts of the agent benchmark: round trips and checkpoint rows, and what kioku sends.

Every contender is built again with its connections through a
:class:`bench.roundtrips.RoundTripProxy`, then run alone, one after the other: after
warm-up turns, ``turns`` turns are counted. Checkpoint rows are counted on LangGraph's
tables (every thread) over a direct connection, before and after.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import psycopg

from bench.agent_model import Contender
from bench.common import libpq
from bench.roundtrips import RoundTripProxy

COUNTED_TURNS = 10
WARMUP = 3
ROWS = "SELECT (SELECT count(*) FROM checkpoints), (SELECT count(*) FROM checkpoint_writes)"


def describe(chunk: bytes) -> str:
    """The first frontend message of a round trip, readable: its kind and its SQL if any.

    ``Q`` (simple query) and ``P`` (parse) carry SQL; ``B`` binds a statement prepared
    earlier (psycopg's prepared statements), ``S``/``H`` are a sync or flush alone.
    """
    kind = chr(chunk[0]) if chunk else "?"
    body = chunk[5:]
    if kind == "Q":
        return "query: " + body.split(b"\0", 1)[0].decode(errors="replace")
    if kind == "P":
        name, _, rest = body.partition(b"\0")
        sql = rest.split(b"\0", 1)[0].decode(errors="replace")
        return f"parse{' ' + name.decode() if name else ''}: {sql}"
    if kind == "B":
        statement = body.partition(b"\0")[2].split(b"\0", 1)[0]
        return "bind prepared " + statement.decode(errors="replace")
    length = struct.unpack("!i", chunk[1:5])[0] if len(chunk) >= 5 else 0
    return f"message {kind!r} ({length} bytes)"


def count_one(
    contender: Contender, proxy: RoundTripProxy, rows: psycopg.Connection[Any], turns: int
) -> dict[str, float]:
    """Round trips and checkpoint rows per turn of ``contender`` over ``turns`` turns."""
    for i in range(WARMUP):
        contender.turn(10_000 + i)
    before = rows.execute(ROWS).fetchone()
    proxy.reset()
    for i in range(turns):
        contender.turn(10_000 + WARMUP + i)
    trips = proxy.reset()
    after = rows.execute(ROWS).fetchone()
    assert before is not None and after is not None
    return {
        "round_trips": round(trips / turns, 1),
        "checkpoints": round((after[0] - before[0]) / turns, 1),
        "checkpoint_writes": round((after[1] - before[1]) / turns, 1),
    }


def statements(contender: Contender, proxy: RoundTripProxy) -> list[str]:
    """What each round trip of one more turn of ``contender`` starts with."""
    proxy.log = []
    try:
        contender.turn(20_000)
        return [describe(chunk) for chunk in proxy.log]
    finally:
        proxy.log = None


def count_contenders(
    url: str, build: Callable[[str], dict[str, Contender]], turns: int = COUNTED_TURNS
) -> dict[str, Any]:
    """Every contender's counts per turn, and kioku's round trips of one turn described."""
    proxy = RoundTripProxy(url)
    contenders = build(proxy.url)
    try:
        with psycopg.connect(libpq(url), autocommit=True) as rows:
            per_turn = {name: count_one(c, proxy, rows, turns) for name, c in contenders.items()}
        return {"per_turn": per_turn, "kioku_round_trips": statements(contenders["kioku"], proxy)}
    finally:
        for contender in contenders.values():
            contender.close()
        proxy.close()
