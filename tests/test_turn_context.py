"""A malformed turn context fails where it is made, in one line saying what to pass (issue #39)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from kioku import ConfigurationError, Participant, PrivacyLevel, TurnContext
from kioku._context import Persona

ALICE = Participant("u-alice", "Alice")
PERSONA = Persona(1, "Kioku", 10000)


def context(**overrides: Any) -> TurnContext:
    fields: dict[str, Any] = {
        "channel_id": "c1",
        "user": ALICE,
        "persona": PERSONA,
        "bot_user_id": "bot",
        "server_id": "s1",
    }
    return TurnContext(**{**fields, **overrides})


@pytest.mark.parametrize(
    ("overrides", "names"),
    [
        ({"user": None}, "user must be Participant, not None"),
        ({"user": "u-alice"}, "user must be Participant, not str"),
        ({"user": {"user_id": "u-alice"}}, "user could not be read"),
        ({"persona": None}, "persona must be Persona, not None"),
        ({"persona": {"name": "Kioku"}}, "persona could not be read"),
        ({"persona": {"persona_id": "1", "name": "K", "lineage_id": 10000}}, "persona_id"),
        ({"channel_id": None}, "channel_id must be a string, not None"),
        ({"channel_id": 42}, "channel_id must be a string, not int"),
        ({"bot_user_id": None}, "bot_user_id must be a string"),
        ({"server_id": 7}, "server_id must be a string or None, not int"),
        ({"participants": None}, "participants must be a tuple of Participant"),
        ({"participants": (ALICE, None)}, "participants items must be Participant"),
        ({"participants": ({"display_name": "Bob"},)}, "participants items could not be read"),
        ({"has_tools": "yes"}, "has_tools must be True or False"),
        ({"notifier": "print"}, "notifier must be a callable or None"),
    ],
)
def test_a_malformed_context_is_a_one_line_configuration_error(
    overrides: dict[str, Any], names: str
) -> None:
    with pytest.raises(ConfigurationError) as raised:
        context(**overrides)
    message = str(raised.value)
    assert message.startswith("TurnContext: ") and names in message, message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("make", "names"),
    [
        (lambda: Participant(None, "Alice"), "user_id must be a string"),  # type: ignore[arg-type]
        (lambda: Participant("u", "Alice", "ali"), "aliases must be a tuple of strings"),  # type: ignore[arg-type]
        (lambda: Participant("u", "Alice", ("ali", 3)), "aliases items must be a string"),  # type: ignore[arg-type]
        (lambda: Participant("u", "Alice", privacy=5), "privacy must be a PrivacyLevel"),  # type: ignore[arg-type]
        (lambda: Participant("u", "Alice", privacy="secret"), "privacy must be"),  # type: ignore[arg-type]
        (lambda: Persona(1, None, 10000), "Persona: name must be a string"),  # type: ignore[arg-type]
        (lambda: Persona(1, "K", "10000"), "Persona: lineage_id must be an integer"),  # type: ignore[arg-type]
        (lambda: Persona(True, "K", 10000), "Persona: persona_id must be an integer"),
    ],
)
def test_a_malformed_participant_or_persona_is_a_configuration_error(make: Any, names: str) -> None:
    with pytest.raises(ConfigurationError, match=names):
        make()


def test_json_like_forms_are_still_read() -> None:
    """What LangGraph's API sends (dicts, lists, level names) still builds a context."""
    built = context(
        user={"user_id": "u-alice", "display_name": "Alice", "aliases": ["ali"]},
        persona={"persona_id": 1, "name": "Kioku", "lineage_id": 10000},
        participants=[{"user_id": "u-bob", "display_name": "Bob", "privacy": "partial"}],
    )
    assert built.user == Participant("u-alice", "Alice", ("ali",))
    assert built.persona == PERSONA
    assert built.participants == (Participant("u-bob", "Bob", privacy=PrivacyLevel.PARTIAL),)
    assert Participant("u", "U", ["a"]).aliases == ("a",)  # type: ignore[arg-type]
    assert Participant("u", "U", privacy=1).privacy is PrivacyLevel.PARTIAL  # type: ignore[arg-type]
    assert dataclasses.replace(built, server_id=None).is_dm
