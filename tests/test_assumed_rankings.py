"""A build's rankings sent with its turn state, on what the last build read (issue #36).

From its second turn on, a builder ranks overflowing blocks on the settings and recorded
embedder its last build for the server read and the memory windows it holds, and sends
those rankings in the turn state's round trip. They are kept only when the state read
shows that very basis: a change made anywhere else in between is seen by the same turn.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from sqlalchemy import text

from kioku import KiokuStore
from kioku._context_build import loader
from kioku._context_build import run as run_module
from kioku._context_build import stages as stages_module
from kioku._context_build.assumed import same_basis
from kioku._context_build.items import BuiltContext
from kioku._context_build.render import ContextBudgets
from kioku._db import driver
from kioku._db.models import Memory
from kioku._domain.settings import ServerSettings
from tests.test_context_build import SAVED_AT, Scenario

BUDGETS = ContextBudgets(server_memories=120, personal_memories=150)
"""Small enough that both memory blocks overflow, so both are ranked."""
QUESTION = [HumanMessage("Alice: which day does Kioku serve tea?")]


@pytest.fixture
def scenario(store: KiokuStore) -> Scenario:
    scenario = Scenario(store)
    scenario.build_world()
    _write_elsewhere(scenario, "server", *(f"filler fact {i} about tea" for i in range(40)))
    _write_elsewhere(scenario, "personal", *(f"{{user}} tried tea number {i}" for i in range(20)))
    return scenario


def _write_elsewhere(scenario: Scenario, scope: str, *contents: str) -> None:
    """Memories saved as another worker would: versions move, this process's windows stay."""
    owner = {"server_id": "srv-a"} if scope == "server" else {"user_id": "u-alice"}
    with scenario.store.transaction() as session:
        for content in contents:
            session.add(
                Memory(
                    scope=scope,
                    persona_lineage_id=scenario.kioku.lineage_id,
                    content=content,
                    created_at=SAVED_AT,
                    **owner,
                )
            )
            session.flush()


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The statements of each round trip the build's session makes through the driver."""
    counts: list[int] = []
    real = driver.fetch_many

    def counted(session: Any, statements: Any) -> Any:
        counts.append(len(statements))
        return real(session, statements)

    monkeypatch.setattr(driver, "fetch_many", counted)
    return counts


def _shown(built: BuiltContext) -> list[tuple[str, str]]:
    return [(item.tag, item.text) for item in built.items]


def _personal(built: BuiltContext) -> str:
    [personal] = [item.text for item in built.items if item.tag == "personal_memories"]
    return personal


def _fresh(scenario: Scenario) -> BuiltContext:
    """What a builder with nothing to assume builds now."""
    return scenario.builder(budgets=BUDGETS).build(scenario.context(), QUESTION)


def test_a_later_build_sends_its_rankings_with_the_turn_state(
    scenario: Scenario, sent: list[int]
) -> None:
    builder = scenario.builder(budgets=BUDGETS)
    first = builder.build(scenario.context(), QUESTION)
    assert sent == [1, 2]  # the turn state, then both rankings
    sent.clear()
    second = builder.build(scenario.context(), QUESTION)
    assert sent == [3]  # all three in one round trip
    assert second.retrieval == ("server_memories", "personal_memories")
    assert not second.failed_stages
    assert _shown(second) == _shown(first) == _shown(_fresh(scenario))


def test_personal_memories_disabled_in_between_are_not_shown(
    scenario: Scenario, sent: list[int]
) -> None:
    builder = scenario.builder(budgets=BUDGETS)
    assert "Memories:" in _personal(builder.build(scenario.context(), QUESTION))
    with scenario.store.accounts() as accounts:
        accounts.upsert_server("srv-a", personal_memories_enabled=False)
    sent.clear()
    built = builder.build(scenario.context(), QUESTION)
    assert "Memories:" not in _personal(built)
    assert sent == [3, 1]  # the assumption failed: the server's block ranked again
    assert _shown(built) == _shown(_fresh(scenario))


@pytest.mark.parametrize("scope", ["server", "personal"])
def test_a_memory_saved_elsewhere_in_between_is_shown(scenario: Scenario, scope: str) -> None:
    builder = scenario.builder(budgets=BUDGETS)
    builder.build(scenario.context(), QUESTION)
    _write_elsewhere(scenario, scope, "Kioku serves tea on Fridays and Sundays now")
    built = builder.build(scenario.context(), QUESTION)
    assert "Fridays and Sundays" in built.render()
    assert _shown(built) == _shown(_fresh(scenario))


def test_a_failed_round_trip_builds_as_before(
    scenario: Scenario, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    builder = scenario.builder(budgets=BUDGETS)
    builder.build(scenario.context(), QUESTION)
    real = stages_module.run_together

    def refused_with_the_state(session: Any, work: Any) -> Any:
        if len(work) == 3:
            session.execute(text("SELECT 1 / 0"))  # the transaction fails, as a lost one would
        return real(session, work)

    monkeypatch.setattr(stages_module, "run_together", refused_with_the_state)
    built = builder.build(scenario.context(), QUESTION)
    assert "sent with the rankings failed" in caplog.text
    assert not built.failed_stages
    assert _shown(built) == _shown(_fresh(scenario))


def _state(settings: ServerSettings, versions: dict[Any, int | None], embedder: Any = None) -> Any:
    return loader.TurnState(settings, versions, None, embedder=embedder)


def test_the_basis_holds_only_when_everything_it_assumed_is_read_back() -> None:
    settings = ServerSettings(personal_memories_enabled=True)
    scope, unwritten = ("server", "srv-a", 1), ("personal", "u-alice", 0)
    assumed = _state(settings, {scope: 4, unwritten: None}, ("hashing-384", 384))
    read = _state(settings, {scope: 4, ("personal", "u-bob", 1): 9}, ("hashing-384", 384))
    assert same_basis(assumed, read)
    assert not same_basis(assumed, _state(settings, {scope: 5}, ("hashing-384", 384)))
    written = {scope: 4, unwritten: 1}
    assert not same_basis(assumed, _state(settings, written, ("hashing-384", 384)))
    disabled = ServerSettings(personal_memories_enabled=False)
    assert not same_basis(assumed, _state(disabled, {scope: 4}, ("hashing-384", 384)))
    assert not same_basis(assumed, _state(settings, {scope: 4}, ("other-384", 384)))


def test_a_failed_assumption_embeds_the_message_once(
    scenario: Scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The message's vector depends on the message alone (and whether vectors are usable,
    which the assumption checks): a build made again from the state read reuses it."""
    calls: list[str] = []
    real = run_module.query_embedding

    def counted(deps: Any, query: str) -> Any:
        calls.append(query)
        return real(deps, query)

    monkeypatch.setattr(run_module, "query_embedding", counted)
    builder = scenario.builder(budgets=BUDGETS)
    builder.build(scenario.context(), QUESTION)
    _write_elsewhere(scenario, "server", "Kioku serves tea on Fridays and Sundays now")
    calls.clear()
    built = builder.build(scenario.context(), QUESTION)
    assert calls == [QUESTION[0].text]
    assert _shown(built) == _shown(_fresh(scenario))
