"""The write decision (``kioku._memory.write_decision``): pure, one place, every rule."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kioku._context import Participant, Persona, PrivacyLevel, TurnContext
from kioku._domain.settings import ServerSettings
from kioku._memory.write_decision import (
    Refusal,
    Write,
    WriteKind,
    decide,
    decisions_by_settings,
)

ALICE = Participant("alice", "Alice")
BOB = Participant("bob", "Bob")
CAROL = Participant("carol", "Carol", privacy=PrivacyLevel.PARTIAL)
CONTEXT = TurnContext(
    channel_id="general",
    user=ALICE,
    persona=Persona(1, "Kio", 10000),
    bot_user_id="bot",
    server_id="srv",
    participants=(BOB, CAROL),
)
ON = ServerSettings(self_teaching_enabled=True)
OFF = ServerSettings(self_teaching_enabled=False)
NO_PERSONAL = ServerSettings(self_teaching_enabled=True, personal_memories_enabled=False)
KINDS: tuple[WriteKind, ...] = ("create", "update", "delete")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("owner", [None, "alice", "bob", "carol", "stranger"])
def test_self_teaching_off_refuses_every_write(kind: WriteKind, owner: str | None) -> None:
    for settings in (OFF, ServerSettings(personal_memories_enabled=False)):
        decision = decide(Write(kind, owner, 10), settings, CONTEXT)
        assert decision.refusal is Refusal.DISABLED
        assert not decision.allowed


def test_a_disabled_server_wins_over_a_failed_check() -> None:
    """``None``: a check refused the call; only a disabled server's answer replaces it."""
    assert decide(None, OFF, CONTEXT).refusal is Refusal.DISABLED
    assert decide(None, ON, CONTEXT).refusal is Refusal.CHECKS


def test_server_wide_writes_are_allowed_and_shown() -> None:
    for kind in KINDS:
        for settings in (ON, NO_PERSONAL):
            decision = decide(Write(kind), settings, CONTEXT)
            assert decision.allowed and decision.shown, (kind, settings)


def test_the_limit_is_the_servers_override_else_the_default() -> None:
    assert decide(Write("create", None, 100), ON, CONTEXT).limit == 100
    assert decide(Write("create", "bob", 100), ON, CONTEXT).limit == 100
    overridden = ServerSettings(
        self_teaching_enabled=True, max_server_memories=5, max_personal_memories=7
    )
    assert decide(Write("create", None, 100), overridden, CONTEXT).limit == 5
    assert decide(Write("create", "bob", 100), overridden, CONTEXT).limit == 7


def test_personal_memories_are_shown_where_the_reach_shows_them() -> None:
    assert decide(Write("create", "bob"), ON, CONTEXT).shown
    assert decide(Write("create", "alice"), ON, CONTEXT).shown
    assert not decide(Write("create", "bob"), NO_PERSONAL, CONTEXT).shown


def test_a_create_in_a_scope_the_turn_cannot_see_is_allowed_unshown() -> None:
    """With personal memories off the memory is still saved, but no answer may name the
    scope's memories: no exact repeat, no duplicate refusal."""
    decision = decide(Write("create", "bob", 10), NO_PERSONAL, CONTEXT)
    assert decision.allowed and not decision.shown
    assert decision.personal_memories_enabled is False


@pytest.mark.parametrize("kind", ["update", "delete"])
def test_changes_follow_the_reach(kind: WriteKind) -> None:
    assert decide(Write(kind, "bob"), ON, CONTEXT).allowed
    assert decide(Write(kind, "stranger"), ON, CONTEXT).refusal is Refusal.OUT_OF_REACH
    assert decide(Write(kind, "carol"), ON, CONTEXT).refusal is Refusal.OUT_OF_REACH
    # Personal memories off: only the triggering user's own stay changeable, unshown.
    assert decide(Write(kind, "bob"), NO_PERSONAL, CONTEXT).refusal is Refusal.OUT_OF_REACH
    own = decide(Write(kind, "alice"), NO_PERSONAL, CONTEXT)
    assert own.allowed and not own.shown


def test_the_statements_table_is_the_decision_for_each_pair_of_settings() -> None:
    """Indexed ``2 * self_teaching + personal`` (0-based here, 1-based in SQL)."""
    assert decisions_by_settings(Write("update"), CONTEXT) == (False, False, True, True)
    assert decisions_by_settings(Write("update", "bob"), CONTEXT) == (False, False, False, True)
    assert decisions_by_settings(Write("update", "alice"), CONTEXT) == (False, False, True, True)
    assert decisions_by_settings(Write("update", "stranger"), CONTEXT) == (False,) * 4
    for owner in (None, "alice", "bob", "carol", "stranger"):
        for index, allowed in enumerate(decisions_by_settings(Write("update", owner), CONTEXT)):
            settings = ServerSettings(
                self_teaching_enabled=bool(index // 2), personal_memories_enabled=bool(index % 2)
            )
            assert allowed == decide(Write("update", owner), settings, CONTEXT).allowed


def test_the_decision_needs_no_database_library() -> None:
    probe = (
        "import sys, kioku._memory.write_decision\n"
        "print(sorted(n for n in ('sqlalchemy', 'psycopg', 'pgvector') if n in sys.modules))"
    )
    found = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert found.stdout.strip() == "[]"
