"""One set of memory options for the per-turn graph and the middleware (issue #37)."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from kioku import ConfigurationError, KiokuMemoryMiddleware, KiokuStore, TurnOptions, build_graph
from kioku.graphs._options import OPTION_NAMES, checked_options
from kioku.testing import Script, ScriptedChatModel


def test_both_entry_points_take_the_same_options() -> None:
    for entry in (build_graph, KiokuMemoryMiddleware.__init__):
        options = inspect.signature(entry).parameters["options"]
        assert options.kind is inspect.Parameter.VAR_KEYWORD
        assert "TurnOptions" in str(options.annotation)
    assert set(OPTION_NAMES) == set(TurnOptions.__annotations__)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_tool_round": 2}, "unknown memory option 'max_tool_round'"),
        ({"max_tool_rounds": -1}, "max_tool_rounds must be 0 or more"),
        ({"max_thread_messages": 0}, "max_thread_messages must be at least 1"),
    ],
)
def test_a_wrong_option_is_a_one_line_configuration_error(
    options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message) as raised:
        checked_options(options)  # type: ignore[arg-type]
    assert "\n" not in str(raised.value)


def test_none_takes_the_default() -> None:
    assert checked_options({"max_thread_messages": None, "max_tool_rounds": 2}) == {
        "max_tool_rounds": 2
    }


def test_the_graph_and_the_middleware_refuse_an_unknown_option(store: KiokuStore) -> None:
    with pytest.raises(ConfigurationError, match="unknown memory option 'budget'"):
        KiokuMemoryMiddleware(store, budget=None)  # type: ignore[call-arg]
    with pytest.raises(ConfigurationError, match="unknown memory option 'budget'"):
        build_graph(ScriptedChatModel(script=Script()), store, budget=None)  # type: ignore[call-arg]


def test_options_reach_the_steps(store: KiokuStore) -> None:
    middleware = KiokuMemoryMiddleware(store, max_tool_rounds=1, max_thread_messages=4)
    assert middleware.steps.max_tool_rounds == 1
    assert middleware.steps.max_thread_messages == 4
