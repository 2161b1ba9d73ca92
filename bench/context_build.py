"""Context build latency (issue #3): p50/p95 over a realistic memory load.

Scenario per case: 100 server memories, 5 participants x 100 personal memories, and
short-term memory in N other channels (50, then 1,000) plus the current one, on a real
PostgreSQL (embedded unless KIOKU_DATABASE_URL is set) with LangGraph's PostgresSaver.

Run: .venv/bin/python -m bench.context_build [--iterations 300]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage
from sqlalchemy import text

from kioku import KiokuSettings, KiokuStore, Participant, TurnContext, load_settings
from kioku._context_build.build import ContextBuilder
from kioku._db.models import Memory
from kioku._stm.model import StmMessage
from kioku._stm.store import ShortTermMemory

SERVER = "bench-server"
RESET_TABLES = (
    "memories, memory_history, stm_threads, checkpoints, checkpoint_blobs, checkpoint_writes"
)
PARTICIPANTS = tuple(Participant(f"bench-user-{i}", f"User {i}") for i in range(5))
DIALOGUE = [HumanMessage("User 0: hi"), AIMessage("hello!"), HumanMessage("User 0: what's up?")]


def _percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _seed(store: KiokuStore, stm: ShortTermMemory, channels: int) -> TurnContext:
    with store.transaction() as session:
        session.execute(text(f"TRUNCATE {RESET_TABLES}"))
    with store.accounts() as accounts:
        accounts.upsert_server(SERVER, "Bench", self_teaching_enabled=True)
        persona = accounts.create_persona(SERVER, "Kioku")
        for p in PARTICIPANTS:
            accounts.upsert_user(p.user_id, p.display_name)
    with store.transaction() as session:
        session.add_all(
            Memory(
                scope="server",
                server_id=SERVER,
                persona_lineage_id=persona.lineage_id,
                content=f"{{bot}} knows server fact number {i}: the tea of day {i} is oolong",
            )
            for i in range(100)
        )
        session.add_all(
            Memory(
                scope="personal",
                user_id=p.user_id,
                persona_lineage_id=persona.lineage_id,
                content=f"{{user}} told {{bot}} personal fact {i} about their hobbies",
            )
            for p in PARTICIPANTS
            for i in range(100)
        )
    context = TurnContext(
        server_id=SERVER,
        server_name="Bench",
        channel_id="current",
        channel_name="current",
        user=PARTICIPANTS[0],
        persona=persona,
        bot_user_id="bench-bot",
        participants=PARTICIPANTS,
    )
    start = stm.clock()
    for c in range(channels + 1):
        channel = "current" if c == channels else f"channel-{c}"
        speaker = PARTICIPANTS[c % 5]
        messages = [
            StmMessage(
                "user" if i % 2 == 0 else "assistant",
                speaker.display_name if i % 2 == 0 else "Kioku",
                f"message {i} in {channel}",
                start + timedelta(seconds=i),
            )
            for i in range(10)
        ]
        turn = TurnContext(
            server_id=SERVER,
            server_name="Bench",
            channel_id=channel,
            channel_name=channel,
            user=speaker,
            persona=persona,
            bot_user_id="bench-bot",
            participants=PARTICIPANTS,
        )
        stm.capture(turn, messages)
        if c % 2 == 0:
            stm.write_summary(turn, f"Summary of {channel}: people are discussing tea and hobbies.")
    return context


def _measure(run: Callable[[], object], iterations: int) -> tuple[float, float, float]:
    for _ in range(20):
        run()
    samples = []
    for _ in range(iterations):
        t = time.perf_counter()
        run()
        samples.append((time.perf_counter() - t) * 1000)
    return statistics.median(samples), _percentile(samples, 0.95), max(samples)


def _report(label: str, stats: tuple[float, float, float]) -> None:
    print(f"{label:<48} {stats[0]:8.2f} {stats[1]:8.2f} {stats[2]:8.2f}")


def _case(
    store: KiokuStore, builder: ContextBuilder, context: TurnContext, channels: int, runs: int
) -> None:
    built = builder.build(context, DIALOGUE)
    assert not built.failed_stages, built.failed_stages

    def cold() -> object:
        for key in store.cache.cached_keys():
            store.cache.invalidate(key)
        return builder.build(context, DIALOGUE)

    label = f"100 server + 5x100 personal + {channels} ch"
    _report(label + " (LTM cached)", _measure(lambda: builder.build(context, DIALOGUE), runs))
    _report(label + " (LTM cold)", _measure(cold, runs))
    print(f"  tokens per block: {built.tokens}  omitted: {built.omitted}")


def main() -> None:
    """Seed each case, then time ``ContextBuilder.build``."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--iterations", type=int, default=300)
    args = parser.parse_args()
    settings = load_settings()
    if settings.database_url is None:
        settings = KiokuSettings(data_dir=Path(tempfile.mkdtemp(prefix="kioku-bench-")))
    store = KiokuStore.open(settings)
    store.setup()
    now = datetime.now(UTC)
    stm = ShortTermMemory(store, store.checkpointer(), clock=lambda: now)
    builder = ContextBuilder(store, stm)
    print(f"{'case':<48} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
    try:
        for channels in (50, 1000):
            context = _seed(store, stm, channels)
            _case(store, builder, context, channels, args.iterations)
    finally:
        store.close()


if __name__ == "__main__":
    main()
