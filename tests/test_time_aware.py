"""Time-aware memories: event times, "when" on every line, since/until, time phrases."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from kioku import KiokuStore, create_long_term_memory_tool
from kioku._context import SENT_AT, latest_sent_at, sent_at_of
from kioku._domain.scopes import ServerScope
from kioku._memory.repository import MemoryRepository
from kioku._memory.when import when_label
from kioku._search.when import Window, window_of
from kioku._tools.invoke import _single_call_graph
from kioku._tools.ltm import create_memory_tool
from kioku._tools.search import search_long_term_memory
from tests.helpers import World, insert_server_memory, make_world, memory_row

NOW = datetime(2026, 11, 24, 10, 0, tzinfo=UTC)


@pytest.fixture
def world(store: KiokuStore) -> World:
    return make_world(store)


def create(world: World, content: str, **args: Any) -> dict[str, Any]:
    tool = create_long_term_memory_tool(world.store)
    arguments = {"memory_content": content, "memory_scope": "server_wide", **args}
    return world.run(tool, arguments, world.context()).result


def search(world: World, **args: Any) -> dict[str, Any]:
    return search_long_term_memory(world.store, world.context(), args)[0]


@pytest.mark.parametrize(
    ("moment", "label"),
    [
        (NOW - timedelta(hours=2), "2026-11-24, today"),
        (NOW - timedelta(days=1), "2026-11-23, yesterday"),
        (NOW - timedelta(days=5), "2026-11-19, 5 days ago"),
        (NOW - timedelta(days=21), "2026-11-03, 3 weeks ago"),
        (NOW - timedelta(days=200), "2026-05-08, 6 months ago"),
        (NOW - timedelta(days=800), "2024-09-15, 2 years ago"),
        (NOW + timedelta(days=1), "2026-11-25, tomorrow"),
        (NOW + timedelta(days=10), "2026-12-04, in 10 days"),
    ],
)
def test_when_label(moment: datetime, label: str) -> None:
    assert when_label(moment, NOW) == label


@pytest.mark.parametrize(
    ("query", "since", "until"),
    [
        ("what did we do last week", datetime(2026, 11, 16), datetime(2026, 11, 23)),
        ("what happened in May", datetime(2026, 5, 1), datetime(2026, 6, 1)),
        ("in December 2025 we met", datetime(2025, 12, 1), datetime(2026, 1, 1)),
        ("anything from yesterday?", datetime(2026, 11, 23), datetime(2026, 11, 24)),
        ("this month", datetime(2026, 11, 1), datetime(2026, 12, 1)),
        ("in 2024", datetime(2024, 1, 1), datetime(2025, 1, 1)),
        ("what changed since May", datetime(2026, 5, 1), datetime(2026, 11, 25)),
        ("anything new since 2024?", datetime(2024, 1, 1), datetime(2026, 11, 25)),
        ("what happened since yesterday", datetime(2026, 11, 23), datetime(2026, 11, 25)),
        ("since last month", datetime(2026, 10, 1), datetime(2026, 11, 25)),
        ("since 2 weeks ago", datetime(2026, 11, 7), datetime(2026, 11, 25)),
        ("at the end of May 2024", datetime(2024, 5, 1), datetime(2024, 6, 1)),
        ("in May 0000, or in 2024", datetime(2024, 1, 1), datetime(2025, 1, 1)),
        # "past" is the last span up to today; "last" the calendar one before this.
        ("what happened in the past week", datetime(2026, 11, 17), datetime(2026, 11, 25)),
        ("over the past month", datetime(2026, 10, 25), datetime(2026, 11, 25)),
        ("in the last 10 days", datetime(2026, 11, 14), datetime(2026, 11, 25)),
        ("the past three weeks", datetime(2026, 11, 3), datetime(2026, 11, 25)),
        ("the day before yesterday", datetime(2026, 11, 22), datetime(2026, 11, 23)),
        ("this morning", datetime(2026, 11, 24), datetime(2026, 11, 25)),
        ("seven days ago", datetime(2026, 11, 16), datetime(2026, 11, 19)),
        ("a couple of weeks ago", datetime(2026, 11, 7), datetime(2026, 11, 14)),
        ("last weekend", datetime(2026, 11, 21), datetime(2026, 11, 23)),
        # Ahead: plans carry future event times.
        ("what is on next week", datetime(2026, 11, 30), datetime(2026, 12, 7)),
        ("next month", datetime(2026, 12, 1), datetime(2027, 1, 1)),
        ("in 3 days", datetime(2026, 11, 26), datetime(2026, 11, 29)),
        ("what's happening in December?", datetime(2026, 12, 1), datetime(2027, 1, 1)),
        ("what did we do in December?", datetime(2025, 12, 1), datetime(2026, 1, 1)),
        # Days, a day either side (a day said in a time zone may be another in UTC).
        ("on May 14, 2023", datetime(2023, 5, 13), datetime(2023, 5, 16)),
        ("the 14th of May 2023", datetime(2023, 5, 13), datetime(2023, 5, 16)),
        ("2023-05-14", datetime(2023, 5, 13), datetime(2023, 5, 16)),
        ("what happened May 2023", datetime(2023, 5, 1), datetime(2023, 6, 1)),
        ("what happened on may 14th?", datetime(2026, 5, 13), datetime(2026, 5, 16)),
        # Without a year: the latest one up to today, or the next one for a look ahead.
        ("what happened on November 30?", datetime(2025, 11, 29), datetime(2025, 12, 2)),
        ("what is planned for January?", datetime(2027, 1, 1), datetime(2027, 2, 1)),
        ("what is planned for November 28?", datetime(2026, 11, 27), datetime(2026, 11, 30)),
        ("what plans were made since December?", datetime(2025, 12, 1), datetime(2026, 11, 25)),
        ("within the past week", datetime(2026, 11, 17), datetime(2026, 11, 25)),
    ],
)
def test_time_phrases(query: str, since: datetime, until: datetime) -> None:
    assert window_of(query, NOW) == Window(since.replace(tzinfo=UTC), until.replace(tzinfo=UTC))


def test_no_time_phrase() -> None:
    assert window_of("may I ask what tea Alice likes", NOW) is None
    assert window_of("what is the phone number of June", NOW) is None  # a name
    assert window_of("we may 2 times a week meet", NOW) is None  # the verb
    assert window_of("May 2 of us come along?", NOW) is None
    assert window_of("what was said by May?", NOW) is None  # a name, without a year
    assert window_of("anything new for June?", NOW) is None
    assert window_of("ſix days ago", NOW) is None  # no Unicode case folding into ASCII
    assert window_of("summarize it in 2000 words", NOW) is None  # an amount, not a year
    assert window_of("x" * 10_000 + " 3 " * 5_000, NOW) is None


@pytest.mark.parametrize(
    "query", ["marathon in December 9999", "marathon in May 0000", "in December 9999 2025"]
)
def test_a_time_phrase_past_the_calendar_is_no_time_phrase(world: World, query: str) -> None:
    """A phrase naming a day no calendar has is ignored: the search answers as usual."""
    assert window_of(query, NOW) is None
    create(world, "Alice ran the Lisbon marathon", event_time="2025-05-08")
    found = search(world, query=query)
    assert found["status"] in ("memories_found", "no_memories_found"), found


def test_a_time_phrase_narrows_what_is_found_never_hides_it(world: World) -> None:
    """A phrase's words say when, not what: adding one to a query that finds a memory of
    that time still finds it, and a query that only names a time finds what happened
    then (the relevance floor counts a memory of the phrase's window as relevant)."""
    cat = create(world, "Alice adopted a grey cat named Miso", event_time="2025-05-10")
    create(world, "Bob repainted the tea house sign", event_time="2024-01-20")
    for query in ("cat", "cat in May 2025", "what pet did Alice adopt in May 2025"):
        found = search(world, query=query)
        assert found["status"] == "memories_found", (query, found)
        assert found["memories"][0].startswith(f"ID:{cat['memory_id']} "), (query, found)
    then = search(world, query="what happened in May 2025")
    assert then["status"] == "memories_found", then
    assert then["memories"][0].startswith(f"ID:{cat['memory_id']} ")
    nothing = search(world, query="zebra quantum chromodynamics")
    assert nothing["status"] == "no_memories_found", nothing


def test_a_query_about_a_time_alone_searches_that_time(world: World) -> None:
    """ "What happened in May 2025" finds May 2025's memories however many others there
    are: the search is narrowed to the phrase's window, not just ranked by it."""
    with world.store.transaction() as session:
        for day in range(40):
            insert_server_memory(
                session,
                world,
                f"what happened at meeting {day} happened to be dull",
                created_at=datetime(2024, 1, 1, tzinfo=UTC) + timedelta(days=day),
            )
    cat = create(world, "Alice adopted a grey cat named Miso", event_time="2025-05-10")
    then = search(world, query="what happened in May 2025")
    assert then["status"] == "memories_found", then
    assert [m.split()[0] for m in then["memories"]] == [f"ID:{cat['memory_id']}"]


@pytest.mark.parametrize(
    "query",
    [
        "what happened in the past month?",
        "any updates from last week?",
        "what did I miss last week?",
        "what did everyone do last week?",
        "summarize last week",
    ],
)
def test_a_question_about_a_recent_time_finds_its_memories(world: World, query: str) -> None:
    now = datetime.now(UTC)
    last_week = now - timedelta(days=now.weekday() + 3)  # the Friday before this week
    saved = create(world, "Bob repainted the tea house sign", event_time=last_week.isoformat())
    create(world, "Alice adopted a grey cat named Miso", event_time="2024-05-10")
    found = search(world, query=query)
    assert found["status"] == "memories_found", (query, found)
    assert found["memories"][0].startswith(f"ID:{saved['memory_id']} "), (query, found)


def test_a_memory_says_when_it_happened(world: World) -> None:
    saved = create(world, "Alice ran the Lisbon marathon", event_time="2025-05-08")
    assert saved["status"] == "memory_saved_successfully", saved
    assert saved["event_time"] == "2025-05-08T00:00:00+00:00"
    row = memory_row(world.store, saved["memory_id"])
    assert row is not None and row.event_time == datetime(2025, 5, 8, tzinfo=UTC)
    found = search(world, query="marathon")
    assert found["memories"][0].startswith(f"ID:{saved['memory_id']} (2025-05-08, ")
    refused = create(world, "Alice ran again", event_time="last Tuesday")
    assert refused["status"] == "memory_save_failed_invalid_args"
    assert "ISO 8601" in refused["reason"]


def test_when_it_happened_is_the_event_time_else_when_it_was_saved(world: World) -> None:
    """One definition (``memories.happened_at``), read by rows, records and since/until."""
    dated = create(world, "Alice ran the Porto half marathon", event_time="2025-05-08")
    saved_at = datetime(2024, 1, 2, 3, 4, tzinfo=UTC)
    with world.store.transaction() as session:
        undated = insert_server_memory(
            session, world, "Alice ran the Berlin marathon", created_at=saved_at
        )
    assert undated is not None
    with world.store.sessions() as session:
        records = {
            r.id: r
            for r in MemoryRepository(session).list(ServerScope("srv-a", world.persona.lineage_id))
        }
    assert records[dated["memory_id"]].happened_at == datetime(2025, 5, 8, tzinfo=UTC)
    assert records[undated].event_time is None
    assert records[undated].happened_at == saved_at
    early = search(world, query="Alice ran marathon", until="2025-01-01")
    assert [m.split()[0] for m in early["memories"]] == [f"ID:{undated}"]
    assert early["memories"][0].startswith(f"ID:{undated} (2024-01-02, ")


def test_typed_memories_take_an_event_time(world: World) -> None:
    tool = create_memory_tool(world.store)
    args = {
        "memory_type": "semantic",
        "memory_content": "The tea club met",
        "event_time": "2024-03-02",
    }
    saved = world.run(tool, args, world.context()).result
    assert saved["status"] == "memory_saved_successfully", saved
    row = memory_row(world.store, saved["memory_id"])
    assert row is not None and row.event_time == datetime(2024, 3, 2, tzinfo=UTC)


def test_since_and_until_narrow_a_search(world: World) -> None:
    old = create(world, "Alice visited the tea farm in Shizuoka", event_time="2024-04-10")
    new = create(world, "Alice visited the tea market in Kyoto", event_time="2026-04-10")
    both = search(world, query="Alice visited tea", limit=10)
    assert len(both["memories"]) == 2
    recent = search(world, query="Alice visited tea", since="2025-01-01")
    assert [m.split()[0] for m in recent["memories"]] == [f"ID:{new['memory_id']}"]
    early = search(world, query="Alice visited tea", until="2025-01-01")
    assert [m.split()[0] for m in early["memories"]] == [f"ID:{old['memory_id']}"]
    bad = search(world, query="tea", since="2026-01-01", until="2025-01-01")
    assert bad["status"] == "search_failed_invalid_args"
    assert bad["reason"].startswith("since must be before until (until is not included")
    then = search(world, query="what happened in March 2023?")
    assert then["status"] == "no_memories_found"
    assert "from 2023-03-01 until 2023-04-01" in then["reason"], then
    none = search(world, query="Alice visited tea", since="2030-01-01")
    assert none["status"] == "no_memories_found"
    assert "with since 2030-01-01T00:00:00+00:00" in none["reason"], none


def test_a_time_phrase_ranks_its_window_first(world: World) -> None:
    now = datetime.now(UTC)
    long_ago = create(
        world,
        "Alice tried a new oolong at the tea house",
        event_time=(now - timedelta(days=300)).isoformat(),
    )
    last_week = create(
        world,
        "Alice tried a green tea at the tea house",
        event_time=(now - timedelta(days=now.weekday() + 3)).isoformat(),
    )
    plain = search(world, query="which tea did Alice try at the tea house", limit=2)
    phrased = search(world, query="which tea did Alice try at the tea house last week", limit=2)
    assert {m.split()[0] for m in plain["memories"]} == {
        f"ID:{long_ago['memory_id']}",
        f"ID:{last_week['memory_id']}",
    }
    assert phrased["memories"][0].startswith(f"ID:{last_week['memory_id']} ")


def test_without_an_event_time_a_memory_happened_when_its_message_was_sent(
    world: World,
) -> None:
    """The turn's ``message_time``, else the latest human message's ``kioku_sent_at``."""
    sent = datetime(2025, 3, 14, 9, 30, tzinfo=UTC)
    tool = create_long_term_memory_tool(world.store)
    context = replace(world.context(), message_time=sent.replace(tzinfo=None))  # naive: UTC
    args = {"memory_content": "Alice adopted a cat named Miso", "memory_scope": "server_wide"}
    saved = world.run(tool, args, context).result
    assert saved["event_time"] == sent.isoformat(), saved
    typed = world.run(
        create_memory_tool(world.store),
        {"memory_type": "episodic", "memory_content": "Alice fixed the boiler"},
        context,
    ).result
    row = memory_row(world.store, typed["memory_id"])
    assert row is not None and row.event_time == sent

    call = AIMessage(
        "",
        tool_calls=[
            {
                "name": "create_long_term_memory",
                "args": {"memory_content": "Bob moved to Porto", "memory_scope": "server_wide"},
                "id": "call_1",
            }
        ],
    )
    human = HumanMessage("I moved to Porto", additional_kwargs={SENT_AT: "2025-01-02T08:00:00Z"})
    state = _single_call_graph([tool]).invoke({"messages": [human, call]}, context=world.context())
    answer = json.loads(state["messages"][-1].content)
    assert answer["event_time"] == "2025-01-02T08:00:00+00:00", answer
    found = search(world, query="Porto")
    assert found["memories"][0].startswith(f"ID:{answer['memory_id']} (2025-01-02, ")


def test_a_sent_time_is_read_only_when_it_is_one() -> None:
    said = HumanMessage("hi", additional_kwargs={SENT_AT: "2025-01-02T08:00:00+00:00"})
    garbled = HumanMessage("hi", additional_kwargs={SENT_AT: "last tuesday"})
    assert sent_at_of(said) == datetime(2025, 1, 2, 8, tzinfo=UTC)
    assert sent_at_of(garbled) is None and sent_at_of(HumanMessage("hi")) is None
    assert latest_sent_at([said, garbled]) is None  # the latest human message decides


@pytest.mark.parametrize("offset", ["+23:59", "-18:00", "+16:00"])
def test_any_offset_python_reads_is_saved_in_utc_not_refused_by_the_database(
    world: World, offset: str
) -> None:
    """PostgreSQL takes offsets up to 16 hours; ISO 8601 (and Python) up to a day."""
    moment = datetime.fromisoformat(f"2025-05-08T12:00:00{offset}").astimezone(UTC)
    saved = create(
        world, f"Alice landed in Nadi ({offset})", event_time=f"2025-05-08T12:00{offset}"
    )
    assert saved["status"] == "memory_saved_successfully", saved
    assert saved["event_time"] == moment.isoformat()
    typed = world.run(
        create_memory_tool(world.store),
        {
            "memory_type": "episodic",
            "memory_content": f"The ferry left Nadi ({offset})",
            "event_time": f"2025-05-08T12:00{offset}",
        },
        world.context(),
    ).result
    assert typed["status"] == "memory_saved_successfully", typed
    row = memory_row(world.store, typed["memory_id"])
    assert row is not None and row.event_time == moment
    found = search(world, query="Nadi", since=f"2025-05-01T00:00{offset}")
    assert found["status"] == "memories_found", found


def test_a_time_outside_utc_years_is_refused_as_an_argument(world: World) -> None:
    refused = create(world, "Alice was born", event_time="0001-01-01T00:00+01:00")
    assert refused["status"] == "memory_save_failed_invalid_args", refused
    assert "between 0001-01-02 and 9999-12-30" in refused["reason"]
    for edge in ("9999-12-31T23:00-05:00", "9999-12-31", "0001-01-01T12:00Z"):
        late = search(world, query="Alice", until=edge)
        assert late["status"] == "search_failed_invalid_args", late
    last = create(world, "Alice will retire", event_time="9999-12-30T23:00Z")
    assert last["status"] == "memory_saved_successfully", last


def test_times_read_back_as_utc_whatever_the_session_zone(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Connections ask for UTC, so a time near year 1 or 9999 reads back in any zone."""
    create(world, "Alice planted the first tree", event_time="0001-01-02T01:00Z")
    last = create(world, "Alice planted the last tree", event_time="9999-12-30T23:00Z")
    monkeypatch.setenv("PGTZ", "Asia/Tokyo")  # read by libpq at connect
    world.store.engine.dispose()
    found = search(world, query="Alice planted tree")
    assert found["status"] == "memories_found", found
    assert len(found["memories"]) == 2
    row = memory_row(world.store, last["memory_id"])
    assert row is not None and row.event_time is not None
    assert row.event_time.utcoffset() == timedelta(0)
    monkeypatch.setenv("PGTZ", "America/New_York")
    world.store.engine.dispose()
    assert search(world, query="Alice planted tree")["status"] == "memories_found"


def test_a_sent_time_with_any_offset_reads_as_utc() -> None:
    far = HumanMessage("hi", additional_kwargs={SENT_AT: "2025-01-02T08:00:00+23:00"})
    naive = HumanMessage("hi", additional_kwargs={SENT_AT: "2025-01-02T08:00:00"})
    assert sent_at_of(far) == datetime(2025, 1, 1, 9, tzinfo=UTC)
    assert sent_at_of(naive) == datetime(2025, 1, 2, 8, tzinfo=UTC)
    edge = HumanMessage("hi", additional_kwargs={SENT_AT: "0001-01-01T00:00:00+05:00"})
    assert sent_at_of(edge) is None


def test_a_message_time_kioku_cannot_use_is_refused_early() -> None:
    import dataclasses

    from kioku import ConfigurationError, TurnContext

    context = TurnContext.for_user("alice", thread_id="t")
    sent = dataclasses.replace(context, message_time="2025-05-08T10:00:00+02:00")  # JSON
    assert sent.message_time == datetime(2025, 5, 8, 8, 0, tzinfo=UTC)
    for bad in ("yesterday", 5, datetime(9999, 12, 31, 23)):
        with pytest.raises(ConfigurationError, match="message_time"):
            dataclasses.replace(context, message_time=bad)


def test_an_update_can_correct_when_it_happened(world: World) -> None:
    from kioku import update_long_term_memory_tool

    saved = create(world, "Alice ran the Lisbon marathon", event_time="2025-05-08")
    update = update_long_term_memory_tool(world.store)

    def run(**args: Any) -> dict[str, Any]:
        arguments = {"memory_id": saved["memory_id"], **args}
        return world.run(update, arguments, world.context()).result

    moved = run(memory_content="Alice ran the Lisbon marathon", event_time="2024-10-13")
    assert moved["status"] == "memory_updated_successfully", moved
    assert moved["event_time"] == "2024-10-13T00:00:00+00:00"
    row = memory_row(world.store, saved["memory_id"])
    assert row is not None and row.happened_at == datetime(2024, 10, 13, tzinfo=UTC)
    found = search(world, query="marathon")
    assert found["memories"][0].startswith(f"ID:{saved['memory_id']} (2024-10-13, ")
    history = [h.action for h in world.store.memory_history(saved["memory_id"])]
    assert history == ["create", "update"]

    kept = run(memory_content="Alice ran the Lisbon marathon in 3:41")  # no event_time
    assert kept["status"] == "memory_updated_successfully" and "event_time" not in kept
    row = memory_row(world.store, saved["memory_id"])
    assert row is not None and row.happened_at == datetime(2024, 10, 13, tzinfo=UTC)

    bad = run(memory_content="Alice ran it", event_time="last spring")
    assert bad["status"] == "memory_update_failed_invalid_args", bad
    assert "event_time" in bad["reason"]
    deleting = run(memory_content="", event_time="2024-10-13")
    assert deleting["status"] == "memory_update_failed_invalid_args", deleting
    assert memory_row(world.store, saved["memory_id"]) is not None
