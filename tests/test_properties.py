"""Arbitrary model arguments always yield a documented status; failures write nothing.

Bad input (NUL, lone surrogates, NaN and infinities, deep or huge metadata, megabyte
strings and argument names) is the model's fault: it never gets a ``…_db_error`` or
``…_internal_error``, and no answer grows with the size of what was sent.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.tools import BaseTool

from kioku import (
    CreateStatus,
    KiokuStore,
    UpdateStatus,
    create_long_term_memory_tool,
    update_long_term_memory_tool,
)
from kioku._domain.statuses import SearchStatus, StmStatus
from kioku._memory.typed import FIELDS, MEMORY_TYPES
from kioku._stm.store import ShortTermMemory
from kioku._tools.ltm import create_memory_tool
from kioku._tools.search import search_long_term_memory_tool
from kioku._tools.stm import update_short_term_memory_tool
from tests.helpers import Clock, World, make_world, run_tool, table_counts

HUGE = 1_000_000
MAX_ANSWER = 10_000
"""No tool answer is longer, whatever the size of the arguments."""

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
        "y" * HUGE,
        "server_wide",
        "target_user",
        "Al\x00ice",
        "\x00",
        "\ud800",
        "tea\udfff",
        "\ud83d\ude00",  # a surrogate pair left as two code points: not encodable either
        "Alice\ud800",
    ]
)
NASTY_NAMES = st.sampled_from(
    ["extra", "\x00", "\ud800", "k" * HUGE, "self", "kioku_reserved_arguments", "runtime"]
)
"""Argument and metadata key names a model might invent."""
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([float("nan"), float("inf"), float("-inf"), 10**400, -(2**64)]),
    st.text(max_size=60),
    NASTY_TEXT,
)


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


BIG_JSON = st.one_of(
    st.integers(min_value=1, max_value=200).map(_nested),
    st.integers(min_value=1, max_value=5_000).map(lambda n: {f"k{i}": i for i in range(n)}),
    st.integers(min_value=1, max_value=5_000).map(lambda n: list(range(n))),
    st.just({"k" * HUGE: 1}),
    st.just(["x" * HUGE]),
)
"""Metadata too deep, with too many keys or values, or too large."""
JSONISH = st.recursive(
    SCALARS | BIG_JSON,
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.text(max_size=5) | NASTY_NAMES, children, max_size=3)
    ),
    max_leaves=6,
)
CREATE_ARGS = st.dictionaries(
    st.sampled_from(["memory_content", "memory_scope", "target_user", "extra"])
    | st.text(max_size=8)
    | NASTY_NAMES,
    JSONISH,
    max_size=4,
)
UPDATE_ARGS = st.dictionaries(
    st.sampled_from(["memory_id", "memory_content", "target_user", "extra"])
    | st.text(max_size=8)
    | NASTY_NAMES,
    JSONISH,
    max_size=4,
)
METADATA_KEYS = sorted({key for fields in FIELDS.values() for key in fields} | {"decay_rate"})
TYPED_ARGS = st.fixed_dictionaries(
    {
        "type": st.sampled_from(MEMORY_TYPES) | JSONISH,
        "content": st.sampled_from(["tea is hot", "{bot} brews tea"]) | NASTY_TEXT,
    },
    optional={
        "importance": SCALARS,
        "metadata": st.dictionaries(
            st.sampled_from(METADATA_KEYS) | NASTY_NAMES, JSONISH, max_size=4
        )
        | JSONISH,
        "embedding": JSONISH,
        "extra": JSONISH,
    },
)
SEARCH_ARGS = st.fixed_dictionaries(
    {"query": st.sampled_from(["tea", "fact"]) | NASTY_TEXT | JSONISH},
    optional={"memory_type": JSONISH, "min_importance": SCALARS, "limit": SCALARS},
) | st.dictionaries(NASTY_NAMES | st.text(max_size=8), JSONISH, max_size=3)
STM_ARGS = st.dictionaries(
    st.just("summary") | NASTY_NAMES, NASTY_TEXT | JSONISH, min_size=1, max_size=2
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
    suppress_health_check=list(HealthCheck),  # timing-based checks vary with machine load
)


def _statuses(statuses: type[StrEnum]) -> set[str]:
    """The documented statuses bad input may get: all but the database and internal errors."""
    return {s.value for s in statuses if not s.name.endswith(("DB_ERROR", "INTERNAL_ERROR"))}


def _check(world: World, tool: BaseTool, args: dict[str, Any], statuses: type[StrEnum]) -> None:
    """Call ``tool``: a documented status, a bounded answer, and no write on failure."""
    before = table_counts(world.store)
    run = run_tool(tool, args, world.context())
    result = run.result
    assert result["status"] in _statuses(statuses), result
    assert isinstance(result.get("reason", ""), str)
    assert len(str(run.message.content)) < MAX_ANSWER, result["status"]
    if "_successfully" not in result["status"]:
        assert table_counts(world.store) == before, result


@pytest.fixture
def stm(store: KiokuStore) -> ShortTermMemory:
    return ShortTermMemory(store, store.checkpointer(), clock=Clock())


Build = Callable[[KiokuStore, ShortTermMemory], BaseTool]


def _never_raises(
    build: Build, arguments: st.SearchStrategy[dict[str, Any]], statuses: type[StrEnum]
) -> Callable[..., None]:
    """A property test: any ``arguments`` for the tool ``build`` makes pass :func:`_check`."""

    @PROPERTY_SETTINGS
    @given(args=arguments)
    def test(world: World, stm: ShortTermMemory, args: dict[str, Any]) -> None:
        world.notices.clear()  # the fixture lives across examples; keep its repr small
        _check(world, build(world.store, stm), args, statuses)

    return test


test_create_never_raises = _never_raises(
    lambda store, _: create_long_term_memory_tool(store), CREATE_ARGS, CreateStatus
)
test_update_never_raises = _never_raises(
    lambda store, _: update_long_term_memory_tool(store), UPDATE_ARGS, UpdateStatus
)
test_create_memory_never_raises = _never_raises(
    lambda store, _: create_memory_tool(store), TYPED_ARGS, CreateStatus
)
test_search_never_raises = _never_raises(
    lambda store, _: search_long_term_memory_tool(store), SEARCH_ARGS, SearchStatus
)
test_short_term_update_never_raises = _never_raises(
    lambda _, stm: update_short_term_memory_tool(stm), STM_ARGS, StmStatus
)


@PROPERTY_SETTINGS
@given(
    memory_id=st.integers(min_value=1, max_value=3) | NASTY_TEXT, content=JSONISH, target=JSONISH
)
def test_update_of_existing_ids_never_raises(
    world: World, memory_id: Any, content: Any, target: Any
) -> None:
    args = {"memory_id": memory_id, "memory_content": content, "target_user": target}
    _check(world, update_long_term_memory_tool(world.store), args, UpdateStatus)


@pytest.mark.parametrize(
    "name", ["self", "config", "run_manager", "args", "kwargs", "kioku_reserved_arguments"]
)
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
