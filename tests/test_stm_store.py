"""Short-term memory in LangGraph persistence (SPEC §7), time driven by an injected clock."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from sqlalchemy import func, select, text

from kioku import KiokuStore, PrivacyLevel
from kioku._db.models import StmThread
from kioku._stm.model import StmKey
from kioku._stm.store import ShortTermMemory
from tests.helpers import T0, Clock, World, make_world, msgs, server_key, user_key


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def world(store: KiokuStore) -> World:
    return make_world(store)


@pytest.fixture
def stm(store: KiokuStore, clock: Clock) -> ShortTermMemory:
    return ShortTermMemory(store, store.checkpointer(), clock=clock)


def test_capture_writes_server_and_user_entries(
    stm: ShortTermMemory, world: World, clock: Clock
) -> None:
    clock.advance(hours=1)
    assert stm.capture(world.context(), msgs("hi", "hello!"))
    for key in (server_key(world), user_key(world)):
        entry = stm.get(key)
        assert entry is not None
        assert [m.text for m in entry.messages] == ["hi", "hello!"]
        assert entry.messages[0].at == T0  # the original message time, not capture time
        assert entry.last_updated == T0 + timedelta(hours=1)
        assert (entry.server_name, entry.channel_name) == ("Server A", "general")


def test_dm_capture_writes_only_the_user_entry(stm: ShortTermMemory, world: World) -> None:
    stm.capture(world.context(server_id=None, channel_id="dm-7"), msgs("psst"))
    assert stm.get(StmKey("user", "u-alice", "dm-7", world.persona.lineage_id)) is not None
    with world.store.sessions() as session:
        kinds = session.scalars(select(StmThread.kind)).all()
    assert kinds == ["user"]


def test_full_privacy_is_not_captured(stm: ShortTermMemory, world: World) -> None:
    invisible = replace(world.alice, privacy=PrivacyLevel.FULL)
    assert not stm.capture(world.context(user=invisible), msgs("secret"))
    assert stm.get(server_key(world)) is None


def test_keeps_the_last_ten_and_the_summary(
    stm: ShortTermMemory, world: World, clock: Clock
) -> None:
    stm.write_summary(world.context(), "We are planning a picnic.")
    for batch in range(3):
        clock.advance(minutes=10)
        stm.capture(world.context(), msgs(*(f"m{batch}-{i}" for i in range(5)), start=clock.now))
    entry = stm.get(server_key(world))
    assert entry is not None
    assert len(entry.messages) == 10
    assert entry.messages[-1].text == "m2-4" and entry.messages[0].text == "m1-0"
    assert entry.summary == "We are planning a picnic."


def test_recapturing_the_same_messages_does_not_duplicate(
    stm: ShortTermMemory, world: World
) -> None:
    history = msgs("a", "b", "c")
    stm.capture(world.context(), history[:2])
    stm.capture(world.context(), history)
    entry = stm.get(server_key(world))
    assert entry is not None and [m.text for m in entry.messages] == ["a", "b", "c"]


def test_summary_is_truncated_and_written_to_both_entries(
    stm: ShortTermMemory, world: World
) -> None:
    stm.capture(world.context(), msgs("x"))
    written = stm.write_summary(world.context(), "s" * 2000)
    assert len(written) == 1500
    for key in (server_key(world), user_key(world)):
        entry = stm.get(key)
        assert entry is not None and entry.summary == written
        assert [m.text for m in entry.messages] == ["x"]


def test_ttl_is_judged_at_read_time(stm: ShortTermMemory, world: World, clock: Clock) -> None:
    stm.capture(world.context(), msgs("x"))
    clock.advance(hours=11, minutes=59)
    assert stm.get(server_key(world)) is not None
    clock.advance(minutes=2)
    assert stm.get(server_key(world)) is None  # 12 h without a summary

    stm.write_summary(world.context(), "sum")
    clock.advance(hours=23)
    assert stm.get(server_key(world)) is not None  # 24 h with a summary
    clock.advance(hours=1, minutes=1)
    assert stm.get(server_key(world)) is None
    assert stm.load(server_key(world)) is not None  # still stored until swept


def test_expired_entry_starts_fresh(stm: ShortTermMemory, world: World, clock: Clock) -> None:
    stm.write_summary(world.context(), "old topic")
    clock.advance(hours=30)
    stm.capture(world.context(), msgs("new", start=clock.now))
    entry = stm.get(server_key(world))
    assert (
        entry is not None and entry.summary is None and [m.text for m in entry.messages] == ["new"]
    )


def test_survives_a_restart_and_is_shared_between_processes(
    stm: ShortTermMemory, world: World, store: KiokuStore, database_url: str
) -> None:
    stm.capture(world.context(), msgs("before restart"))
    stm.write_summary(world.context(), "restart-proof")
    thread_id = server_key(world).thread_id
    script = textwrap.dedent(
        f"""
        from kioku import KiokuSettings, KiokuStore
        from kioku._db.engine import make_engine
        from kioku._stm.model import StmKey
        from kioku._stm.store import ShortTermMemory
        url = {database_url!r}
        store = KiokuStore(make_engine(url), settings=KiokuSettings(database_url=url))
        stm = ShortTermMemory(store, store.checkpointer())
        key = StmKey("server", "srv-a", "chan-1", {world.persona.lineage_id})
        entry = stm.load(key)
        assert key.thread_id == {thread_id!r}
        print(entry.summary, entry.messages[0].text)
        store.close()
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "restart-proof before restart"


def test_in_memory_checkpointer_works_too(store: KiokuStore, world: World, clock: Clock) -> None:
    stm = ShortTermMemory(store, InMemorySaver(), clock=clock)
    stm.capture(world.context(), msgs("hello"))
    assert stm.get(server_key(world)) is not None
    assert stm.sweep(retention=timedelta(days=1)).deleted_threads == 0


def test_candidates_come_from_the_index(stm: ShortTermMemory, world: World, clock: Clock) -> None:
    for i in range(5):
        clock.advance(minutes=1)
        stm.capture(world.context(channel_id=f"chan-{i}", channel_name=f"c{i}"), msgs(f"in {i}"))
    rows = stm.candidates(world.context(channel_id="chan-0"), cross_server=False)
    assert [r.key.channel_id for r in rows] == ["chan-4", "chan-3", "chan-2", "chan-1"]
    assert all(r.key.kind == "server" for r in rows)
    # Another lineage sees nothing.
    other = world.context(persona=world.other_persona)
    assert stm.candidates(other, cross_server=False) == []


def test_cross_server_candidates_need_the_opt_in(
    stm: ShortTermMemory, world: World, clock: Clock
) -> None:
    stm.capture(
        world.context(server_id="srv-b", server_name="Server B", channel_id="b-1"),
        msgs("over in B"),
    )
    stm.capture(world.context(server_id=None, channel_id="dm-1"), msgs("in a DM"))
    here = world.context(channel_id="a-9")
    assert stm.candidates(here, cross_server=False) == []
    channels = [r.key.channel_id for r in stm.candidates(here, cross_server=True)]
    assert sorted(channels) == ["b-1", "dm-1"]
    # In a DM the user's own entries are always candidates.
    assert [
        r.key.channel_id
        for r in stm.candidates(
            world.context(server_id=None, channel_id="dm-2"), cross_server=False
        )
    ] != []


def test_expired_entries_are_not_candidates(
    stm: ShortTermMemory, world: World, clock: Clock
) -> None:
    stm.capture(world.context(channel_id="old"), msgs("x"))
    clock.advance(hours=13)
    assert stm.candidates(world.context(channel_id="now"), cross_server=False) == []


def test_lookup_uses_the_index(
    stm: ShortTermMemory, world: World, store: KiokuStore, clock: Clock
) -> None:
    stm.capture(world.context(channel_id="x"), msgs("x"))
    with store.sessions() as session:
        session.execute(text("SET LOCAL enable_seqscan = off"))
        plan = (
            session.execute(
                text(
                    "EXPLAIN SELECT channel_id FROM stm_threads WHERE kind = 'server' "
                    "AND owner_id = 'srv-a' AND lineage_id = :l "
                    "ORDER BY last_updated DESC LIMIT 50"
                ),
                {"l": world.persona.lineage_id},
            )
            .scalars()
            .all()
        )
    assert any("ix_stm_threads_owner_recent" in line for line in plan), plan


def test_entries_are_rows_and_the_sweeper_drops_idle_ones(
    stm: ShortTermMemory, world: World, store: KiokuStore, clock: Clock
) -> None:
    for i in range(5):
        clock.advance(minutes=1)
        stm.capture(world.context(), msgs(f"m{i}", start=clock.now))
    stm.capture(world.context(channel_id="quiet"), msgs("q"))

    def checkpoints() -> int:
        with store.sessions() as session:
            return int(session.execute(text("SELECT count(*) FROM checkpoints")).scalar_one())

    assert checkpoints() == 0  # one row per entry, no checkpoint threads
    report = stm.sweep(retention=timedelta(days=7))
    assert report.deleted_threads == 0
    entry = stm.get(server_key(world))
    assert entry is not None and entry.messages[-1].text == "m4"

    clock.advance(days=8)
    stm.capture(world.context(channel_id="fresh"), msgs("f", start=clock.now))
    report = stm.sweep(retention=timedelta(days=7))
    assert report.deleted_threads == 4
    with store.sessions() as session:
        assert session.scalar(select(func.count()).select_from(StmThread)) == 2
    assert stm.load(server_key(world)) is None


def test_kioku_sweep_command(kioku_cli: Callable[..., str]) -> None:
    assert "idle short-term memory entries" in kioku_cli("sweep")


def test_an_entry_deleted_since_it_was_read_loads_as_gone(
    stm: ShortTermMemory, world: World, store: KiokuStore, clock: Clock
) -> None:
    """A version this process has not seen, of an entry deleted meanwhile: nothing, not the
    older copy it holds."""
    stm.capture(world.context(), msgs("hello"))
    key = server_key(world)
    held = stm.load(key)
    assert held is not None
    with store.transaction() as session:
        session.execute(text("DELETE FROM stm_threads"))
    assert stm.load_version(key, held.last_updated + timedelta(seconds=1)) is None
