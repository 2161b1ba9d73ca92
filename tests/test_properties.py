"""Arbitrary model arguments always yield a documented status; failures write nothing."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import World, make_world, run_tool, table_counts
from toolkit import (
    CreateStatus,
    KiokuStore,
    UpdateStatus,
    create_long_term_memory_tool,
    update_long_term_memory_tool,
)

NASTY_TEXT = st.sampled_from(
    [
        "",
        " ",
        "{user}",
        "{{bot}}",
        "{unknown}",
        "{}",
        "'; DROP TABLE memories; --",
        "1 OR 1=1",
        "\x00\x1f",
        "ID:1",
        "ID:-1",
        "@Alice",
        "ALI",
        "self",
        "Carol",
        "Matrix Max",
        "🦊" * 300,
        "a" * 1001,
        "x" * 100_000,
        "server_wide",
        "target_user",
    ]
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=60),
    NASTY_TEXT,
)
JSONISH = st.recursive(
    SCALARS,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=6,
)
CREATE_ARGS = st.dictionaries(
    st.sampled_from(["memory_content", "memory_scope", "target_user", "extra"])
    | st.text(max_size=8),
    JSONISH,
    max_size=4,
)
UPDATE_ARGS = st.dictionaries(
    st.sampled_from(["memory_id", "memory_content", "target_user", "extra"]) | st.text(max_size=8),
    JSONISH,
    max_size=4,
)


@pytest.fixture
def world(store: KiokuStore) -> World:
    """Created once per test function; hypothesis reuses it for every example."""
    world = make_world(store)
    create = create_long_term_memory_tool(store)
    for args in (
        {"memory_content": "{bot} server fact", "memory_scope": "server_wide"},
        {"memory_content": "{user} fact", "memory_scope": "target_user", "target_user": "Alice"},
        {"memory_content": "{user} fact", "memory_scope": "target_user", "target_user": "Bob"},
    ):
        assert (
            run_tool(create, args, world.context()).result["status"] == "memory_saved_successfully"
        )
    return world


PROPERTY_SETTINGS = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _check(
    store: KiokuStore, result: dict[str, Any], allowed: set[str], before: tuple[int, int]
) -> None:
    assert result["status"] in allowed, result
    assert isinstance(result.get("reason", ""), str)
    if "_successfully" not in result["status"]:
        assert table_counts(store) == before, result


@PROPERTY_SETTINGS
@given(args=CREATE_ARGS)
def test_create_never_raises(world: World, args: dict[str, Any]) -> None:
    store = world.store
    before = table_counts(store)
    result = run_tool(create_long_term_memory_tool(store), args, world.context()).result
    _check(store, result, {s.value for s in CreateStatus}, before)


@PROPERTY_SETTINGS
@given(args=UPDATE_ARGS)
def test_update_never_raises(world: World, args: dict[str, Any]) -> None:
    store = world.store
    before = table_counts(store)
    result = run_tool(update_long_term_memory_tool(store), args, world.context()).result
    _check(store, result, {s.value for s in UpdateStatus}, before)


@PROPERTY_SETTINGS
@given(
    memory_id=st.integers(min_value=1, max_value=3) | NASTY_TEXT, content=JSONISH, target=JSONISH
)
def test_update_of_existing_ids_never_raises(
    world: World, memory_id: Any, content: Any, target: Any
) -> None:
    store = world.store
    before = table_counts(store)
    args = {"memory_id": memory_id, "memory_content": content, "target_user": target}
    result = run_tool(update_long_term_memory_tool(store), args, world.context()).result
    _check(store, result, {s.value for s in UpdateStatus}, before)


@pytest.mark.parametrize("name", ["self", "config", "run_manager", "args", "kwargs"])
def test_argument_names_clashing_with_langchain_get_a_status(world: World, name: str) -> None:
    """A model may invent any argument name; none of them may raise inside the graph."""
    before = table_counts(world.store)
    for tool in (
        create_long_term_memory_tool(world.store),
        update_long_term_memory_tool(world.store),
    ):
        outcome = run_tool(tool, {name: None}, world.context())
        assert outcome.result["status"].endswith("invalid_args"), outcome.result
        assert name in outcome.result["reason"]
    assert table_counts(world.store) == before
