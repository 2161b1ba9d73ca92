"""Short-term memory writes: atomic across the user and server entries, never losing a
concurrent writer's data (threads and processes), and bounded in size."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psycopg
import pytest
from sqlalchemy import func, select, text
from sqlalchemy.exc import IntegrityError

from kioku import KiokuSettings, KiokuStore
from kioku._db.models import StmThread
from kioku._stm import entries as entries_module
from kioku._stm import registry as registry_module
from kioku._stm.model import StmMessage
from kioku._stm.store import ShortTermMemory
from tests.helpers import World, make_world, msgs, server_key, user_key

ROUNDS = 40


@pytest.fixture
def roomy_store(engine: Any, database_url: str) -> Any:
    """A store whose entries keep every message of these tests."""
    from tests.conftest import TABLES

    store = KiokuStore(
        engine,
        settings=KiokuSettings(database_url=database_url, stm_max_messages_per_channel=500),
    )
    yield store
    store.close()
    with engine.begin() as connection:
        connection.execute(text(f"TRUNCATE {TABLES} RESTART IDENTITY CASCADE"))


@pytest.fixture
def world(roomy_store: KiokuStore) -> World:
    return make_world(roomy_store)


def test_a_failed_second_entry_leaves_the_first_unwritten(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    stm = ShortTermMemory(world.store)
    real_params = entries_module.record_params

    def second_refused(entries: Any) -> Any:
        params = real_params(entries)
        params["kind"][1] = "neither"  # the database refuses the second entry's row
        return params

    for module in (entries_module, registry_module):  # the optimistic and the locked write
        monkeypatch.setattr(module, "record_params", second_refused)
    with pytest.raises(IntegrityError):
        stm.write_summary(world.context(), "half of this must not stay")
    monkeypatch.undo()

    fresh = ShortTermMemory(world.store, world.store.checkpointer())
    assert fresh.load(user_key(world)) is None
    assert fresh.load(server_key(world)) is None
    with world.store.sessions() as session:
        assert session.scalar(select(func.count()).select_from(StmThread)) == 0


def test_capture_and_summary_at_once_both_survive(world: World) -> None:
    capturer = ShortTermMemory(world.store, world.store.checkpointer())
    summariser = ShortTermMemory(world.store, world.store.checkpointer())
    context = world.context()
    for i in range(ROUNDS):
        _at_once(
            lambda: capturer.capture(context, msgs(f"m{i}")),  # noqa: B023 (run at once)
            lambda: summariser.write_summary(context, f"s{i}"),  # noqa: B023
        )
        for key in (user_key(world), server_key(world)):
            entry = ShortTermMemory(world.store, world.store.checkpointer()).load(key)
            assert entry is not None
            assert entry.summary == f"s{i}", f"round {i}: the summary was lost"
            assert f"m{i}" in [m.text for m in entry.messages], f"round {i}: capture was lost"


def _at_once(*actions: Callable[[], object]) -> None:
    """Run ``actions`` in threads released together; re-raise the first failure."""
    start = threading.Barrier(len(actions))

    def run(action: Callable[[], object]) -> object:
        start.wait()
        return action()

    with ThreadPoolExecutor(len(actions)) as pool:
        for future in [pool.submit(run, action) for action in actions]:
            future.result()


def test_two_processes_writing_one_entry_lose_nothing(world: World, database_url: str) -> None:
    script = textwrap.dedent(
        """
        import sys
        from datetime import UTC, datetime, timedelta
        from kioku import KiokuSettings, KiokuStore, Participant, Persona, TurnContext
        from kioku._stm.model import StmMessage
        from kioku._stm.store import ShortTermMemory
        url, role, persona_id, lineage_id = sys.argv[1:5]
        store = KiokuStore.open(KiokuSettings(
            database_url=url, stm_max_messages_per_channel=500, sweep_interval_minutes=0))
        stm = ShortTermMemory(store, store.checkpointer())
        alice = Participant("u-alice", "Alice")
        context = TurnContext(
            server_id="srv-a", server_name="Server A", channel_id="chan-1",
            channel_name="general", user=alice, participants=(alice,),
            persona=Persona(int(persona_id), "Kioku", int(lineage_id)), bot_user_id="bot-1")
        start = datetime(2026, 1, 1, tzinfo=UTC)
        print("ready", flush=True)
        sys.stdin.readline()
        for i in range(30):
            if role == "capture":
                at = start + timedelta(seconds=i)
                stm.capture(context, [StmMessage("user", "Alice", f"p{i}", at, "u-alice")])
            else:
                stm.write_summary(context, f"summary {i}")
        store.close()
        """
    )
    persona = (str(world.persona.persona_id), str(world.persona.lineage_id))
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", script, database_url, role, *persona],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for role in ("capture", "summary")
    ]
    for worker in workers:
        assert worker.stdout is not None and worker.stdout.readline().strip() == "ready"
    for worker in workers:  # both go at once
        assert worker.stdin is not None
        worker.stdin.write("go\n")
        worker.stdin.flush()
    for worker in workers:
        _, stderr = worker.communicate(timeout=300)
        assert worker.returncode == 0, stderr

    stm = ShortTermMemory(world.store, world.store.checkpointer())
    for key in (user_key(world), server_key(world)):
        entry = stm.load(key)
        assert entry is not None
        assert entry.summary == "summary 29"
        assert [m.text for m in entry.messages] == [f"p{i}" for i in range(30)]


def test_captured_messages_are_capped_with_a_marker(world: World) -> None:
    stm = ShortTermMemory(world.store, world.store.checkpointer())
    huge = "x" * 1_000_000
    for turn in range(10):
        stm.capture(world.context(), msgs(f"{turn} {huge}"))
    entry = stm.load(server_key(world))
    assert entry is not None
    limit = world.store.settings.stm_max_message_length
    assert all(len(m.text) <= limit for m in entry.messages)
    assert entry.messages[0].text.endswith("[truncated: 1000002 characters]")
    with world.store.engine.connect() as connection:
        stored = connection.execute(
            text(
                "SELECT coalesce(sum(pg_column_size(entry)), 0) FROM stm_threads"
            )
        ).scalar_one()
    assert stored < 2_000_000, "ten 1 MB messages must not become megabytes of entries"


def test_short_messages_are_kept_whole() -> None:
    from datetime import UTC, datetime

    from kioku._stm.model import StmPolicy, capped

    message = StmMessage("user", "Alice", "short", datetime(2026, 1, 1, tzinfo=UTC))
    assert capped(message, StmPolicy().max_message_length) is message
    cut = capped(message.__class__("user", "A", "y" * 500, message.at), 120)
    assert len(cut.text) == 120 and cut.text.endswith("[truncated: 500 characters]")


def test_a_write_from_a_stale_cache_is_redone_over_the_newer_entry(world: World) -> None:
    """Two instances (as two processes): each writes from what it last saw, in one round
    trip; when the other wrote in between, the database refuses and nothing is lost."""
    first = ShortTermMemory(world.store, world.store.checkpointer())
    second = ShortTermMemory(world.store, world.store.checkpointer())
    context = world.context()
    first.capture(context, msgs("one"))
    second.capture(context, msgs("two"))  # reads the entry first wrote, then writes
    first.capture(context, msgs("three"))  # its cached entry is stale by now
    second.write_summary(context, "summary over all three")
    for key in (user_key(world), server_key(world)):
        entry = ShortTermMemory(world.store, world.store.checkpointer()).load(key)
        assert entry is not None
        assert [m.text for m in entry.messages] == ["one", "two", "three"]
        assert entry.summary == "summary over all three"


def test_a_failed_one_round_trip_write_leaves_the_next_writes_working(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the one-round-trip write's row is refused after its version check passed, the
    pipeline's implicit transaction is undone and the connection serves the next writes."""
    stm = ShortTermMemory(world.store)
    context = world.context()
    written = [f"m{i}" for i in range(6)]
    for text_ in written:  # the first is written under lock, the rest in one round trip
        stm.capture(context, msgs(text_))
    real_params = entries_module.record_params

    def refused(entries: Any) -> Any:
        params = real_params(entries)
        params["kind"][0] = "neither"
        return params

    monkeypatch.setattr(entries_module, "record_params", refused)
    with pytest.raises(psycopg.errors.CheckViolation):
        stm.capture(context, msgs("refused"))
    monkeypatch.undo()
    for i in range(3):
        written.append(f"after-{i}")
        stm.capture(context, msgs(written[-1]))
    _assert_both_entries_hold(world, written)


def test_an_error_building_the_write_sends_nothing(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The one-round-trip write commits what it queued when its pipeline ends, so every
    statement is built before the first is sent."""
    stm = ShortTermMemory(world.store)
    context = world.context()
    stm.capture(context, msgs("kept"))  # under lock; the next write is the one-round-trip one

    def cannot_build(entries: Any) -> Any:
        raise RuntimeError("the entries cannot be serialised")

    monkeypatch.setattr(entries_module, "record_params", cannot_build)
    with pytest.raises(RuntimeError):
        stm.capture(context, msgs("lost whole"))
    monkeypatch.undo()
    _assert_both_entries_hold(world, ["kept"])
    stm.capture(context, msgs("next"))
    _assert_both_entries_hold(world, ["kept", "next"])


def test_writers_refused_as_stale_keep_writing(world: World) -> None:
    """Two instances writing one channel in turn: each write is refused as stale, redone
    under lock, and the next one-round-trip write on that connection still works."""
    first = ShortTermMemory(world.store, world.store.checkpointer())
    second = ShortTermMemory(world.store, world.store.checkpointer())
    context = world.context()
    written: list[str] = []
    for _ in range(12):
        for writer in (first, second):
            written.append(f"m{len(written)}")
            writer.capture(context, msgs(written[-1]))
    for i in range(8):
        written.append(f"alone-{i}")
        first.capture(context, msgs(written[-1]))
    _assert_both_entries_hold(world, written)


def _assert_both_entries_hold(world: World, texts: list[str]) -> None:
    """The channel's user and server entries hold exactly ``texts``, as stored."""
    for key in (user_key(world), server_key(world)):
        entry = ShortTermMemory(world.store, world.store.checkpointer()).load(key)
        assert entry is not None
        assert [m.text for m in entry.messages] == texts
