"""Context build (SPEC §10): a golden scenario and every rule around it."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from sqlalchemy import event, select, text
from syrupy.assertion import SnapshotAssertion

from kioku import KiokuStore, Participant, PrivacyLevel, TurnContext
from kioku._accounts import settings_params
from kioku._context_build import loader
from kioku._context_build import run as run_module
from kioku._context_build import stages as stages_module
from kioku._context_build.build import ContextBuilder
from kioku._context_build.render import ContextBudgets
from kioku._context_build.tokens import TiktokenCounter
from kioku._db.driver import run_steps
from kioku._db.models import Memory, MemoryAccess
from kioku._memory.repository import version_params
from kioku._stm.model import StmKey, StmMessage
from kioku._stm.registry import StmRegistry
from kioku._stm.store import ShortTermMemory
from tests.helpers import T0, Clock, msgs

ALICE = Participant("u-alice", "Alice", ("ali",))
BOB = Participant("u-bob", "Bob")
CAROL = Participant("u-carol", "Carol", privacy=PrivacyLevel.PARTIAL)
DAVE = Participant("u-dave", "Dave", privacy=PrivacyLevel.FULL)
DIALOGUE: list[BaseMessage] = [
    HumanMessage("Bob: shall we try the new oolong?"),
    AIMessage("Oolong it is!"),
    HumanMessage("Alice: what did we decide about Friday, <@u-bob>?"),
]


SAVED_AT = datetime(2026, 11, 19, 9, 0, tzinfo=UTC)
"""When the scenario's memories were saved (their lines say so)."""


class Scenario:
    def __init__(self, store: KiokuStore) -> None:
        self.store = store
        self.clock = Clock()
        self.stm = ShortTermMemory(store, store.checkpointer(), clock=self.clock)
        with store.accounts() as accounts:
            accounts.upsert_server(
                "srv-a", "Tea House", self_teaching_enabled=True, private_channel_ids=["staff"]
            )
            accounts.upsert_server("srv-b", "Go Club", self_teaching_enabled=True)
            self.kioku = accounts.create_persona("srv-a", "Kioku")
            self.go_kioku = accounts.create_persona("srv-b", "Kioku Go")
            self.shadow = accounts.create_persona("srv-a", "Shadow")
            accounts.upsert_user("u-alice", "Alice", aliases=["ali"], cross_server_stm=True)
            accounts.upsert_user("u-bob", "Bob")
            accounts.upsert_user("u-carol", "Carol", privacy=PrivacyLevel.PARTIAL)
            accounts.upsert_user("u-dave", "Dave", privacy=PrivacyLevel.FULL)
        lineage = self.kioku.lineage_id
        with store.transaction() as session:
            rows = [
                ("server", "srv-a", None, lineage, "{bot} serves tea on Fridays"),
                ("server", "srv-a", None, lineage, "The shop cat is called <@u-bob>'s Mochi"),
                ("server", "srv-a", None, self.shadow.lineage_id, "SHADOW LINEAGE: must not show"),
                ("server", "srv-b", None, self.go_kioku.lineage_id, "SERVER B: must not show"),
                ("personal", None, "u-alice", 0, "{user} is learning Japanese"),
                (
                    "personal",
                    None,
                    "u-alice",
                    lineage,
                    "{user} prefers jasmine tea over {bot}'s coffee",
                ),
                ("personal", None, "u-bob", lineage, "{user} is allergic to milk"),
                ("personal", None, "u-carol", lineage, "CAROL IS PARTIAL: must not show"),
                ("personal", None, "u-dave", lineage, "DAVE IS FULL: must not show"),
            ]
            for scope, server, user, row_lineage, content in rows:
                session.add(
                    Memory(
                        scope=scope,
                        server_id=server,
                        user_id=user,
                        persona_lineage_id=row_lineage,
                        content=content,
                        created_at=SAVED_AT,
                    )
                )
                session.flush()

    def context(self, **overrides: Any) -> TurnContext:
        base = TurnContext(
            server_id="srv-a",
            server_name="Tea House",
            channel_id="general",
            channel_name="general",
            user=ALICE,
            persona=self.kioku,
            bot_user_id="bot-1",
            participants=(ALICE, BOB, CAROL, DAVE),
        )
        return replace(base, **overrides)

    def capture(self, minutes_ago: float, *texts: str, **overrides: Any) -> None:
        self.clock.now = T0 - timedelta(minutes=minutes_ago)
        speaker = overrides.get("user", ALICE).display_name
        self.stm.capture(
            self.context(**overrides), msgs(*texts, start=self.clock.now, speaker=speaker)
        )

    def build_world(self) -> None:
        self.capture(300, "old news", channel_id="old", channel_name="old")  # expires: 13 h later
        self.clock.now = T0 - timedelta(hours=13)
        self.stm.capture(
            self.context(channel_id="old", channel_name="old"),
            msgs("ancient", start=self.clock.now),
        )
        self.capture(50, "the roster is secret", channel_id="staff", channel_name="staff")
        self.capture(
            45,
            "thread under staff",
            channel_id="staff-t",
            channel_name="staff-thread",
            parent_channel_id="staff",
        )
        self.capture(
            40,
            "Bob asked about <@u-carol>",
            "We set up the garden table",
            channel_id="garden",
            channel_name="garden",
            user=BOB,
        )
        self.capture(
            30,
            "joseki study tonight",
            "I'll bring the board",
            channel_id="board",
            channel_name="board",
            server_id="srv-b",
            server_name="Go Club",
            persona=self.kioku,
        )
        self.capture(
            20,
            "can you keep a secret?",
            "always",
            channel_id="dm-alice",
            channel_name=None,
            server_id=None,
            server_name=None,
        )
        self.capture(10, *(f"general message {i}" for i in range(6)))
        self.clock.now = T0 - timedelta(minutes=5)
        self.stm.write_summary(
            self.context(), "Alice and Bob are choosing tea for Friday's tasting."
        )
        self.clock.now = T0

    def builder(self, **kwargs: Any) -> ContextBuilder:
        return ContextBuilder(self.store, self.stm, **kwargs)


@pytest.fixture
def scenario(store: KiokuStore) -> Scenario:
    scenario = Scenario(store)
    scenario.build_world()
    return scenario


def test_golden_context(scenario: Scenario, snapshot: SnapshotAssertion) -> None:
    built = scenario.builder().build(
        scenario.context(), DIALOGUE, system_prompt="You are Kioku, a tea-loving assistant."
    )
    assert built.failed_stages == ()
    assert built.render() == snapshot
    assert built.tokens == snapshot(name="tokens")
    text = built.render()
    assert "must not show" not in text
    assert "roster" not in text and "thread under staff" not in text and "ancient" not in text


def test_other_channels_capped_at_three_newest(scenario: Scenario) -> None:
    built = scenario.builder().build(scenario.context(), DIALOGUE)
    other = [i.text for i in built.items if i.tag == "stm_other_channels"]
    assert len(other) == 3
    assert (
        "a direct message" in other[0] and "#board on Go Club" in other[1] and "#garden" in other[2]
    )


def test_without_the_opt_in_only_this_server(scenario: Scenario) -> None:
    with scenario.store.accounts() as accounts:
        accounts.upsert_user("u-alice", "Alice", aliases=["ali"], cross_server_stm=False)
    built = scenario.builder().build(scenario.context(), DIALOGUE)
    other = [i.text for i in built.items if i.tag == "stm_other_channels"]
    assert len(other) == 1 and "#garden" in other[0]


def test_private_channels_visible_from_a_private_channel_or_with_bypass(scenario: Scenario) -> None:
    with scenario.store.accounts() as accounts:
        accounts.upsert_user("u-alice", "Alice", cross_server_stm=False)
    from_private = scenario.builder().build(scenario.context(is_private_channel=True), DIALOGUE)
    texts = " ".join(i.text for i in from_private.items)
    assert "roster" in texts and "thread under staff" in texts
    with scenario.store.accounts() as accounts:
        accounts.upsert_server("srv-a", stm_privacy_bypass=True)
    bypass = scenario.builder().build(scenario.context(), DIALOGUE)
    assert "thread under staff" in " ".join(i.text for i in bypass.items)


def test_a_channel_a_turn_called_private_stays_out_of_other_channels(
    scenario: Scenario,
) -> None:
    """``is_private_channel`` on the turn that wrote an entry keeps it out of public
    channels, though the server does not list the channel as private; one private turn
    is enough, and the entry stays private for as long as it lives."""
    with scenario.store.accounts() as accounts:
        accounts.upsert_user("u-alice", "Alice", cross_server_stm=False)
    scenario.capture(20, "mods plan to ban Mallory", channel_id="mods", is_private_channel=True)
    scenario.capture(10, "and then a public remark", channel_id="mods", user=BOB)
    scenario.capture(25, "an ordinary chat", channel_id="lobby", user=BOB)
    scenario.clock.now = T0
    texts = " ".join(i.text for i in scenario.builder().build(scenario.context(), DIALOGUE).items)
    assert "Mallory" not in texts and "public remark" not in texts and "ordinary chat" in texts
    private = scenario.context(is_private_channel=True, channel_id="council")
    texts = " ".join(i.text for i in scenario.builder().build(private, DIALOGUE).items)
    assert "Mallory" in texts  # from another private channel of the server, as the listed ones
    other = StmKey("server", "srv-a", "mods", scenario.kioku.lineage_id)
    with scenario.store.sessions() as session:
        [row] = [c for c in StmRegistry(session).entries() if c.key == other]
    assert row.private


def test_threads_of_a_channel_a_turn_called_private_stay_private(scenario: Scenario) -> None:
    """A thread under a channel that a turn called private is private too, whether the
    thread spoke before or after its channel was called private, and though the thread's
    own turns do not say so."""
    with scenario.store.accounts() as accounts:
        accounts.upsert_user("u-alice", "Alice", cross_server_stm=False)
    scenario.capture(
        30, "early thread talk about Mallory", channel_id="mods-t1", parent_channel_id="mods"
    )
    scenario.capture(20, "mods plan to ban Mallory", channel_id="mods", is_private_channel=True)
    scenario.capture(
        15, "later thread talk about Mallory", channel_id="mods-t2", parent_channel_id="mods"
    )
    scenario.capture(
        10,
        "a thread of a public channel",
        channel_id="lobby-t",
        parent_channel_id="lobby",
        user=BOB,
    )
    scenario.clock.now = T0
    texts = " ".join(i.text for i in scenario.builder().build(scenario.context(), DIALOGUE).items)
    assert "Mallory" not in texts and "a thread of a public channel" in texts
    private = scenario.context(is_private_channel=True, channel_id="council")
    texts = " ".join(i.text for i in scenario.builder().build(private, DIALOGUE).items)
    assert "Mallory" in texts


def test_a_channel_private_in_an_expired_entry_is_public_in_its_next_one(
    scenario: Scenario,
) -> None:
    """The flag lives as long as the entry: a new entry written by public turns, and the
    channel's threads, are recalled again."""
    with scenario.store.accounts() as accounts:
        accounts.upsert_user("u-alice", "Alice", cross_server_stm=False)
    scenario.capture(
        20 * 60, "mods plan to ban Mallory", channel_id="mods", is_private_channel=True
    )
    scenario.capture(10, "the picnic is on Sunday", channel_id="mods", user=BOB)
    scenario.capture(8, "thread chat about kites", channel_id="mods-t", parent_channel_id="mods")
    scenario.clock.now = T0
    texts = " ".join(i.text for i in scenario.builder().build(scenario.context(), DIALOGUE).items)
    assert "picnic" in texts and "kites" in texts and "Mallory" not in texts


def _bob_summarised_in_plans(scenario: Scenario, minutes_ago: int) -> None:
    """Bob's message in #plans and a summary retelling it; Alice recalls only this server."""
    with scenario.store.accounts() as accounts:
        accounts.upsert_user("u-alice", "Alice", cross_server_stm=False)
    in_plans = scenario.context(channel_id="plans", user=BOB)
    scenario.clock.now = T0 - timedelta(minutes=minutes_ago)
    said = StmMessage("user", "Bob", "our pineapple plans", scenario.clock.now, user_id="u-bob")
    scenario.stm.capture(in_plans, [said])
    scenario.stm.write_summary(in_plans, "They discussed PINEAPPLE plans")


def test_a_summary_beside_words_of_someone_now_full_is_not_recalled(scenario: Scenario) -> None:
    """Recall drops the words of anyone now FULL, and the summary that may retell them."""
    _bob_summarised_in_plans(scenario, 20)
    scenario.clock.now = T0
    texts = " ".join(i.text for i in scenario.builder().build(scenario.context(), DIALOGUE).items)
    assert "PINEAPPLE" in texts  # recalled while Bob may be remembered
    with scenario.store.accounts() as accounts:
        accounts.upsert_user("u-bob", "Bob", privacy=PrivacyLevel.FULL)
    texts = " ".join(i.text for i in scenario.builder().build(scenario.context(), DIALOGUE).items)
    assert "pineapple" not in texts.lower()


def test_a_summary_is_not_recalled_once_anyone_who_spoke_is_full(scenario: Scenario) -> None:
    """Even after their messages scrolled out of the entry, the summary may retell a person
    now FULL: it is not recalled; erasing them forgets that they spoke there."""
    _bob_summarised_in_plans(scenario, 30)
    later = [
        StmMessage("user", "Alice", f"chat {i}", T0 - timedelta(minutes=20 - i), user_id="u-alice")
        for i in range(12)
    ]
    scenario.stm.capture(scenario.context(channel_id="plans"), later)
    key = StmKey("server", "srv-a", "plans", scenario.kioku.lineage_id)
    entry = scenario.stm.load(key)
    assert entry is not None and "u-bob" in entry.speakers
    assert all(m.user_id != "u-bob" for m in entry.messages)  # scrolled out
    scenario.clock.now = T0
    texts = " ".join(i.text for i in scenario.builder().build(scenario.context(), DIALOGUE).items)
    assert "PINEAPPLE" in texts
    with scenario.store.accounts() as accounts:
        accounts.upsert_user("u-bob", "Bob", privacy=PrivacyLevel.FULL)
    texts = " ".join(i.text for i in scenario.builder().build(scenario.context(), DIALOGUE).items)
    assert "PINEAPPLE" not in texts and "chat 11" in texts
    scenario.store.erase_user("u-bob")
    entry = scenario.stm.load(key)
    assert entry is not None and "u-bob" not in entry.speakers and entry.summary is None


def test_create_directive_before_the_latest_pair(scenario: Scenario) -> None:
    scenario.capture(1, *(f"talk {i}" for i in range(6)), channel_id="fresh", channel_name="fresh")
    scenario.clock.now = T0
    built = scenario.builder().build(
        scenario.context(channel_id="fresh", channel_name="fresh"), DIALOGUE
    )
    tags = [m.additional_kwargs.get("kioku_tag", "dialogue") for m in built.dialogue]
    assert tags == ["dialogue", "stm_create_directive", "dialogue", "dialogue"]
    assert "stm_create_directive" in built.tokens
    assert not any(i.tag == "stm_same_channel" for i in built.items)


def test_no_directive_below_six_messages_or_without_the_tool(scenario: Scenario) -> None:
    scenario.capture(1, "a", "b", channel_id="quiet", channel_name="quiet")
    scenario.clock.now = T0
    quiet = scenario.builder().build(scenario.context(channel_id="quiet"), DIALOGUE)
    assert len(quiet.dialogue) == len(DIALOGUE)
    scenario.capture(1, *(f"t{i}" for i in range(6)), channel_id="busy", channel_name="busy")
    scenario.clock.now = T0
    no_tools = scenario.builder().build(
        scenario.context(channel_id="busy", has_tools=False), DIALOGUE
    )
    assert len(no_tools.dialogue) == len(DIALOGUE)


def test_intent_suppresses_the_stm_hint(scenario: Scenario) -> None:
    normal = scenario.builder().build(scenario.context(), DIALOGUE)
    assert [i.tag for i in normal.items].count("stm_hint") == 1
    intent = scenario.builder().build(scenario.context(), DIALOGUE, ltm_intent=True)
    assert "stm_hint" not in [i.tag for i in intent.items]
    assert "stm_same_channel" in [i.tag for i in intent.items]  # the summary itself stays
    novelai = scenario.builder().build(scenario.context(provider="novelai"), DIALOGUE)
    assert "stm_hint" not in [i.tag for i in novelai.items]


def test_personal_memories_disabled_on_the_server(scenario: Scenario) -> None:
    with scenario.store.accounts() as accounts:
        accounts.upsert_server("srv-a", personal_memories_enabled=False)
    built = scenario.builder().build(scenario.context(), DIALOGUE)
    [personal] = [i for i in built.items if i.tag == "personal_memories"]
    assert "Memories:" not in personal.text and "Alice" in personal.text


def _add_filler(scenario: Scenario, count: int = 40) -> None:
    lineage = scenario.kioku.lineage_id
    with scenario.store.transaction() as session:
        for i in range(count):
            session.add(
                Memory(
                    scope="server",
                    server_id="srv-a",
                    persona_lineage_id=lineage,
                    content=f"filler fact number {i} about the tea shop",
                    created_at=SAVED_AT,
                )
            )
            session.flush()
    for key in scenario.store.cache.cached_keys():
        scenario.store.cache.invalidate(key)


def test_over_budget_without_a_question_drops_the_oldest(scenario: Scenario) -> None:
    """Nothing to rank by: the newest are shown, and the note names the search tool, which
    the turn offers (issue #39: it said "(37 older memories not shown)" alone)."""
    _add_filler(scenario)
    budgets = ContextBudgets(server_memories=120, personal_memories=60)
    built = scenario.builder(budgets=budgets).build(scenario.context(), [])
    [server] = [i for i in built.items if i.tag == "server_memories"]
    assert "filler fact number 39" in server.text  # newest kept
    assert "filler fact number 0 " not in server.text
    omitted = built.omitted["server_memories"]
    assert omitted > 30
    assert (
        f"({omitted} older memories not shown; search_long_term_memory can find them)"
        in server.text
    )
    assert server.tokens <= 120
    [personal] = [i for i in built.items if i.tag == "personal_memories"]
    assert "older personal memor" in personal.text and built.omitted["personal_memories"] >= 1
    assert "search_long_term_memory" in personal.text
    assert built.retrieval == ("server_memories", "personal_memories")
    # Without tools the turn offers no search tool, so the note does not name it.
    quiet = scenario.builder(budgets=budgets).build(scenario.context(has_tools=False), [])
    [server] = [i for i in quiet.items if i.tag == "server_memories"]
    assert f"({quiet.omitted['server_memories']} older memories not shown)" in server.text


def test_over_budget_the_most_relevant_are_rendered_and_search_offered(scenario: Scenario) -> None:
    _add_filler(scenario)
    budgets = ContextBudgets(server_memories=120, personal_memories=60)
    question = [HumanMessage("Alice: which day does Kioku serve tea?")]
    built = scenario.builder(budgets=budgets).build(scenario.context(), question)
    [server] = [i for i in built.items if i.tag == "server_memories"]
    assert "ID:1 (2026-11-19, 3 days ago) Kioku serves tea on Fridays" in server.text  # relevant
    omitted = built.omitted["server_memories"]
    assert (
        f"({omitted} more memories not shown; search_long_term_memory can find them)" in server.text
    )
    assert server.tokens <= 120
    [personal] = [i for i in built.items if i.tag == "personal_memories"]
    assert "search_long_term_memory" in personal.text
    assert built.retrieval == ("server_memories", "personal_memories")


def test_a_build_counts_an_access_of_each_memory_it_shows_and_no_other(
    scenario: Scenario,
) -> None:
    """Counted from what the blocks chose, not read back from their text."""
    _add_filler(scenario)
    lineage = scenario.kioku.lineage_id
    with scenario.store.transaction() as session:
        # Memory 4 is another server's: text naming it must not count it.
        session.add(
            Memory(
                scope="server",
                server_id="srv-a",
                persona_lineage_id=lineage,
                content="the tea menu is in ID:4 (and ID:4 again)",
                created_at=SAVED_AT + timedelta(days=1),
            )
        )
    for key in scenario.store.cache.cached_keys():
        scenario.store.cache.invalidate(key)
    budgets = ContextBudgets(server_memories=400, personal_memories=200)
    question = [HumanMessage("Alice: what is on the tea menu?")]
    built = scenario.builder(budgets=budgets).build(scenario.context(), question)
    shown = Counter(
        int(found)
        for item in built.items
        if item.tag in ("server_memories", "personal_memories")
        for found in re.findall(r"(?:^|[ :;] ?)ID:(\d+) \(", item.text, re.MULTILINE)
    )
    assert built.omitted["server_memories"] > 0
    assert 4 not in shown and len(shown) > 10 and set(shown.values()) == {1}
    scenario.store.access.flush()
    with scenario.store.sessions() as session:
        counted = {
            memory_id: count
            for memory_id, count in session.execute(
                select(MemoryAccess.memory_id, MemoryAccess.access_count)
            )
        }
    assert counted == dict(shown)


def test_a_window_holding_the_whole_scope_is_ranked_by_ids_alone(
    scenario: Scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lighter ranking (ids, no text) renders the very blocks the full rows would."""
    _add_filler(scenario)
    budgets = ContextBudgets(server_memories=120, personal_memories=60)
    question = [HumanMessage("Alice: which day does Kioku serve tea?")]
    full_rows = loader.rank_candidates_steps

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the whole scope is loaded: ids are enough")

    with monkeypatch.context() as patched:
        patched.setattr(loader, "rank_candidates_steps", refused)
        light = scenario.builder(budgets=budgets).build(scenario.context(), question)

    def from_full_rows(*args: Any, **kwargs: Any) -> Any:
        ranking = yield from full_rows(*args, **kwargs)
        return [row.id for row in ranking.best(kwargs["limit"])]

    monkeypatch.setattr(loader, "rank_ids_steps", from_full_rows)
    heavy = scenario.builder(budgets=budgets).build(scenario.context(), question)
    assert light.retrieval == ("server_memories", "personal_memories")
    assert [(i.tag, i.text) for i in light.items] == [(i.tag, i.text) for i in heavy.items]


def test_a_build_ranks_by_its_own_time(scenario: Scenario) -> None:
    """A time phrase ("last week") in the message means the week before the build's
    ``now``, the time its lines are dated by, not the week before the wall clock's."""
    _add_filler(scenario)
    lineage = scenario.kioku.lineage_id
    then = datetime(2024, 6, 20, 12, tzinfo=UTC)
    with scenario.store.transaction() as session:
        for day, place in ((then, "Osaka"), (then - timedelta(days=7), "Kyoto")):
            session.add(
                Memory(
                    scope="server",
                    server_id="srv-a",
                    persona_lineage_id=lineage,
                    content=f"The team trip went to {place}",
                    created_at=SAVED_AT,
                    attributes={"event_time": day.isoformat()},
                )
            )
    for key in scenario.store.cache.cached_keys():
        scenario.store.cache.invalidate(key)
    budgets = ContextBudgets(server_memories=85, personal_memories=60)
    question = [HumanMessage("Alice: where did the team trip go last week?")]
    built = scenario.builder(budgets=budgets).build(scenario.context(), question, now=then)
    [server] = [i for i in built.items if i.tag == "server_memories"]
    assert built.retrieval[0] == "server_memories"
    assert "Kyoto" in server.text and "Osaka" not in server.text  # room for one of them


def test_both_blocks_rank_by_one_embedding_of_the_message(
    scenario: Scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An embedder may be a paid API call: a build embeds its query once, however many
    blocks it ranks."""
    _add_filler(scenario)
    embeddings = scenario.store.embedder.embeddings
    embedded: list[str] = []
    real = embeddings.embed_query

    def counted(text: str) -> list[float]:
        embedded.append(text)
        return real(text)

    monkeypatch.setattr(embeddings, "embed_query", counted)
    budgets = ContextBudgets(server_memories=120, personal_memories=60)
    question = [HumanMessage("Alice: which day does Kioku serve tea?")]
    built = scenario.builder(budgets=budgets).build(scenario.context(), question)
    assert built.retrieval == ("server_memories", "personal_memories")
    assert embedded == ["Alice: which day does Kioku serve tea?"]


def test_below_budget_everything_is_rendered_even_with_a_question(scenario: Scenario) -> None:
    built = scenario.builder().build(scenario.context(), [HumanMessage("which day is tea?")])
    assert built.omitted == {} and built.retrieval == ()
    [server] = [i for i in built.items if i.tag == "server_memories"]
    assert server.text.count("ID:") == 2


def test_a_failing_stage_contributes_nothing(
    scenario: Scenario, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*args: object) -> object:
        raise RuntimeError("loader exploded")

    monkeypatch.setattr(run_module, "server_memories_stage", broken)
    monkeypatch.setattr(loader, "load_other_channel_entries", broken)
    built = scenario.builder().build(scenario.context(), DIALOGUE)
    assert built.failed_stages == ("server_memories", "stm_other_channels")
    tags = [i.tag for i in built.items]
    assert "server_memories" not in tags and "stm_other_channels" not in tags
    assert "personal_memories" in tags and "stm_same_channel" in tags
    assert "context stage server_memories failed" in caplog.text


@pytest.mark.parametrize("opted_in", [True, False])
def test_dm_context(scenario: Scenario, opted_in: bool) -> None:
    with scenario.store.accounts() as accounts:
        accounts.upsert_user("u-alice", "Alice", cross_server_stm=opted_in)
    dm = scenario.context(
        server_id=None, server_name=None, channel_id="dm-alice", participants=(ALICE,)
    )
    built = scenario.builder().build(dm, DIALOGUE)
    [personal] = [i.text for i in built.items if i.tag == "personal_memories"]
    assert "Bob" not in personal and "jasmine" in personal
    assert not any(i.tag == "server_memories" for i in built.items)  # nothing saved in this DM
    other = " ".join(i.text for i in built.items if i.tag == "stm_other_channels")
    assert ("#general on Tea House" in other) is opted_in
    assert ("#board on Go Club" in other) is opted_in


@pytest.mark.parametrize("opted_in", [True, False])
def test_the_turn_state_reads_the_registry_rows_their_own_query_would(
    scenario: Scenario, opted_in: bool
) -> None:
    with scenario.store.accounts() as accounts:
        accounts.upsert_user("u-alice", "Alice", cross_server_stm=opted_in)
    dm = scenario.context(
        server_id=None, server_name=None, channel_id="dm-2", participants=(ALICE,)
    )
    for context in (scenario.context(), scenario.context(channel_id="garden"), dm):
        with scenario.store.reads() as session:
            recent = scenario.stm.recent_threads(context)
            state = run_steps(session, loader.turn_state_steps(context, recent))
            alone = run_steps(session, loader.turn_state_steps(context))
        assert alone.recent_threads is None
        assert (state.settings, state.versions) == (alone.settings, alone.versions)
        assert state.channel_version == alone.channel_version
        assert state.recent_threads is not None
        rows = scenario.stm.recallable(context, state.recent_threads)
        assert rows == scenario.stm.candidates(context)
        assert rows  # something was compared


def test_a_build_reads_other_channels_in_the_turn_state_round_trip(scenario: Scenario) -> None:
    statements: list[str] = []

    def seen(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        statements.append(statement)

    event.listen(scenario.store.engine, "before_cursor_execute", seen)
    try:
        built = scenario.builder().build(scenario.context(), DIALOGUE)
    finally:
        event.remove(scenario.store.engine, "before_cursor_execute", seen)
    assert any(item.tag == "stm_other_channels" for item in built.items)
    assert [s for s in statements if "stm_threads" in s] == statements[:1]  # the state's


def test_the_turn_state_statement_binds_each_name_for_one_part(scenario: Scenario) -> None:
    recent = scenario.stm.recent_threads(scenario.context()).params()
    others = {
        **settings_params("srv-a", False),
        **version_params([]),
        "thread": "t",
        "turn_user": "u",
    }
    assert not recent.keys() & others.keys()
    binds = set(text(loader._TURN_STATE_WITH_THREADS).compile().binds)
    assert binds == recent.keys() | others.keys()


def test_a_failing_registry_read_costs_the_turn_state_nothing(
    scenario: Scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(loader, "_TURN_STATE_WITH_THREADS", "SELECT 1 / 0")
    built = scenario.builder().build(scenario.context(), DIALOGUE)
    assert built.failed_stages == ()
    text_of = {item.tag: item.text for item in built.items}
    assert "jasmine" in text_of["personal_memories"]
    assert "#garden" in text_of["stm_other_channels"]  # read by the stage itself
    assert "roster" not in built.render()  # the private channel stays private


def test_unread_settings_fail_closed(scenario: Scenario, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any) -> None:
        raise RuntimeError("settings unavailable")

    monkeypatch.setattr(loader, "turn_state_steps", broken)
    built = scenario.builder().build(scenario.context(), DIALOGUE)
    assert built.failed_stages == ("settings", "stm_other_channels")
    tags = {item.tag for item in built.items}
    assert "server_memories" in tags and "stm_same_channel" in tags
    assert "jasmine" not in built.render()  # personal memories may be disabled here
    assert "stm_other_channels" not in tags  # private channels unknown


def test_token_counter_is_offline_and_lazy() -> None:
    counter = TiktokenCounter()
    assert counter._encoding is None
    assert counter("hello world") == 2
    assert counter("こんにちは") > 0


def test_unknown_encoding_falls_back_to_offline_cl100k() -> None:
    assert TiktokenCounter("o200k_base")("hello world") == 2


def test_expired_same_channel_entry_is_not_rendered(scenario: Scenario) -> None:
    scenario.clock.now = T0 + timedelta(hours=25)
    built = scenario.builder().build(scenario.context(), DIALOGUE)
    tags = [i.tag for i in built.items]
    assert "stm_same_channel" not in tags and "stm_other_channels" not in tags


def test_both_blocks_rankings_are_sent_in_one_round_trip(
    scenario: Scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Server-wide and personal memories both overflowing: their two rankings go to the
    database together (one pipeline), and render what ranking them one by one renders."""
    from kioku._db import driver

    _add_filler(scenario)
    budgets = ContextBudgets(server_memories=120, personal_memories=60)
    question = [HumanMessage("Alice: which day does Kioku serve tea?")]
    real_fetch_many = driver.fetch_many
    sent: list[int] = []

    def counted(session: Any, statements: Any) -> Any:
        sent.append(len(statements))
        return real_fetch_many(session, statements)

    monkeypatch.setattr(driver, "fetch_many", counted)
    together = scenario.builder(budgets=budgets).build(scenario.context(), question)
    assert together.retrieval == ("server_memories", "personal_memories")
    assert sent == [1, 2]  # the turn state, then both rankings
    monkeypatch.setattr(stages_module, "run_together", _refused)
    alone = scenario.builder(budgets=budgets).build(scenario.context(), question)
    assert not alone.failed_stages
    assert [(i.tag, i.text) for i in alone.items] == [(i.tag, i.text) for i in together.items]


def _refused(*args: Any) -> Any:
    raise RuntimeError("sent together, refused")


def test_a_large_blocks_ranking_is_sent_ahead_and_renders_the_same(
    scenario: Scenario, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Over ``RANK_AHEAD_FROM`` memories, one block's ranking goes first, on a connection of
    its own, and is read after the build's own round trip (no thread); a failure there
    ranks it again in the build's session."""
    from kioku._db.driver import SentAhead

    _add_filler(scenario)
    budgets = ContextBudgets(server_memories=120, personal_memories=60)
    question = [HumanMessage("Alice: which day does Kioku serve tea?")]
    together = scenario.builder(budgets=budgets).build(scenario.context(), question)

    monkeypatch.setattr(stages_module, "RANK_AHEAD_FROM", 1)
    read: list[int] = []
    real_result = SentAhead.result

    def spied(self: Any) -> Any:
        read.append(id(self))
        return real_result(self)

    monkeypatch.setattr(SentAhead, "result", spied)
    builder = scenario.builder(budgets=budgets)
    for _ in range(2):  # the first build reads the turn state alone, the next assumes it
        ahead = builder.build(scenario.context(), question)
        assert ahead.retrieval == together.retrieval and not ahead.failed_stages
        assert [(i.tag, i.text) for i in ahead.items] == [(i.tag, i.text) for i in together.items]
    assert len(read) == 2
    with monkeypatch.context() as busy:  # no idle pooled connection: nothing is sent ahead
        busy.setattr(loader, "idle_connection", lambda engine: False)
        waited = builder.build(scenario.context(), question)
    with monkeypatch.context() as pooled:  # behind a pooler: nothing is sent ahead either
        pooled.setattr(loader, "reaches_server", lambda info: False)
        pooled_build = builder.build(scenario.context(), question)
    assert len(read) == 2
    assert [(i.tag, i.text) for i in waited.items] == [(i.tag, i.text) for i in together.items]
    assert [(i.tag, i.text) for i in pooled_build.items] == [
        (i.tag, i.text) for i in together.items
    ]

    def refused(self: Any) -> Any:
        raise RuntimeError("sent ahead, refused")

    monkeypatch.setattr(SentAhead, "result", refused)
    again = builder.build(scenario.context(), question)
    assert not again.failed_stages
    assert [(i.tag, i.text) for i in again.items] == [(i.tag, i.text) for i in together.items]
    assert "ranking it again" in caplog.text


def test_a_ranking_sent_ahead_gives_its_connection_back_clean_when_the_build_fails(
    scenario: Scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The build's own round trip failing leaves the ranking sent ahead ended: its
    connection goes back to the pool out of pipeline mode, and the next builds work."""
    _add_filler(scenario)
    budgets = ContextBudgets(server_memories=120, personal_memories=60)
    question = [HumanMessage("Alice: which day does Kioku serve tea?")]
    expected = scenario.builder(budgets=budgets).build(scenario.context(), question)
    monkeypatch.setattr(stages_module, "RANK_AHEAD_FROM", 1)
    builder = scenario.builder(budgets=budgets)
    builder.build(scenario.context(), question)  # the next build assumes its turn state
    with monkeypatch.context() as refusing:
        refusing.setattr(stages_module, "run_together", _refused)
        refusing.setattr(stages_module, "run_steps", _refused)
        builder.build(scenario.context(), question)
    pool = scenario.store.engine.pool
    assert pool.checkedout() == 0  # type: ignore[attr-defined]
    for _ in range(pool.size() + 1):  # every pooled connection is used again
        built = builder.build(scenario.context(), question)
        assert not built.failed_stages
        assert [(i.tag, i.text) for i in built.items] == [(i.tag, i.text) for i in expected.items]


def test_a_one_user_app_recalling_its_own_conversations_sends_no_privacy_look_up(
    store: KiokuStore,
) -> None:
    """The turn's own user's stored privacy is read with the turn state, so recalling
    their own other conversations sends no look-up of its own (others' are still read)."""
    stm = store.short_term_memory()
    earlier = TurnContext.for_user("solo", thread_id="earlier")
    at = datetime(2026, 1, 1, tzinfo=UTC)
    stm.capture(earlier, [StmMessage("user", "solo", "I grow tomatoes", at, "solo")])
    statements: list[str] = []

    def seen(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        statements.append(statement)

    event.listen(store.engine, "before_cursor_execute", seen)
    try:
        built = ContextBuilder(store, stm).build(
            TurnContext.for_user("solo", thread_id="now"), [HumanMessage("hello")]
        )
    finally:
        event.remove(store.engine, "before_cursor_execute", seen)
    assert any("tomatoes" in item.text for item in built.items)
    assert not [s for s in statements if "users.privacy_level" in s]
