"""Issue #12: bad input gets ``…_invalid_args`` / ``…_invalid_content``, never a db error.

Each case reproduced on the tools as the model calls them (ToolNode, sync and async);
the pure rules behind them (:func:`check_text`, :func:`check_json`, :func:`echo`) are
tested on their own at the end.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kioku import KiokuStore, create_long_term_memory_tool, update_long_term_memory_tool
from kioku._memory.arguments import MAX_NAME_LENGTH, ArgumentError, check_text, reject_unknown
from kioku._memory.text import (
    ContentFault,
    as_data,
    check_content,
    echo,
    sanitise_content,
    unstorable,
)
from kioku._memory.typed import MAX_METADATA_DEPTH, MAX_METADATA_VALUES, check_json
from kioku._stm.store import ShortTermMemory
from kioku._tools.invoke import run_tool_call
from kioku._tools.ltm import create_memory_tool
from kioku._tools.search import search_long_term_memory_tool
from kioku._tools.stm import update_short_term_memory_tool
from tests.helpers import Clock, World, make_world, memory_row, table_counts

MB = 1_000_000
SHORT = 1_000
"""Every answer below is shorter than this, whatever was sent."""


@pytest.fixture(params=["sync", "async"])
def world(store: KiokuStore, request: pytest.FixtureRequest) -> World:
    return make_world(store, runner=request.param)


def create(world: World, args: dict[str, Any]) -> dict[str, Any]:
    run = world.run(create_long_term_memory_tool(world.store), args, world.context())
    assert len(str(run.message.content)) < SHORT, run.result["status"]
    return run.result


def update(world: World, args: dict[str, Any]) -> dict[str, Any]:
    run = world.run(update_long_term_memory_tool(world.store), args, world.context())
    assert len(str(run.message.content)) < SHORT, run.result["status"]
    return run.result


def typed(world: World, args: dict[str, Any]) -> dict[str, Any]:
    run = world.run(create_memory_tool(world.store), args, world.context())
    assert len(str(run.message.content)) < SHORT, run.result["status"]
    return run.result


def personal(target: str) -> dict[str, Any]:
    return {
        "memory_content": "{user} likes tea",
        "memory_scope": "target_user",
        "target_user": target,
    }


@pytest.mark.parametrize("target", ["Al\x00ice", "Alice\x00", "\x00", "Ali\x07ce", "\x1b[1mAlice"])
def test_a_target_user_with_control_characters_is_not_found(world: World, target: str) -> None:
    """SPEC §3 step 4 / §4 step 3 (issue #39): a name with control characters, NUL
    included, is a name nobody has: ``…_user_not_found``, echoed storably."""
    changed = {"memory_id": 1, "memory_content": "x", "target_user": target}
    for result in (create(world, personal(target)), update(world, changed)):
        assert result["status"].endswith("_user_not_found"), result
        assert "\x00" not in json.dumps(result, ensure_ascii=False)
    assert table_counts(world.store) == (0, 0)


@pytest.mark.parametrize("target", ["Alice\ud800", "\udfff", "\x00\ud800"])
def test_unstorable_target_user_is_invalid_args_naming_it(world: World, target: str) -> None:
    changed = {"memory_id": 1, "memory_content": "x", "target_user": target}
    for result in (create(world, personal(target)), update(world, changed)):
        assert result["status"].endswith("_invalid_args"), result
        assert "target_user" in result["reason"]
    assert table_counts(world.store) == (0, 0)


def test_megabyte_target_user_gets_a_short_answer(world: World) -> None:
    result = create(world, personal("a" * MB))
    assert result["status"] == "memory_save_failed_invalid_args"
    assert f"target_user is {MB} characters; the maximum is {MAX_NAME_LENGTH}" in result["reason"]


def test_unknown_target_user_is_echoed_capped(world: World) -> None:
    result = create(world, personal("z" * MAX_NAME_LENGTH))
    assert result["status"] == "memory_save_failed_user_not_found"
    assert f"… (cut; {MAX_NAME_LENGTH} characters)" in result["reason"]
    assert "z" * 101 not in result["reason"]


def test_megabyte_argument_names_are_not_echoed(world: World) -> None:
    args = {"memory_content": "x", "memory_scope": "server_wide", "k" * MB: 1, "\ud800": 2}
    for name, tool in (
        ("create", create_long_term_memory_tool),
        ("update", update_long_term_memory_tool),
        ("typed", create_memory_tool),
    ):
        run = world.run(tool(world.store), args, world.context())
        assert run.result["status"].endswith("_invalid_args"), name
        assert f"(cut; {MB} characters)" in run.result["reason"], name
        assert "\ufffd" in run.result["reason"] and len(str(run.message.content)) < SHORT


def test_many_unknown_argument_names_are_counted_not_listed(world: World) -> None:
    args = {
        "memory_content": "x",
        "memory_scope": "server_wide",
        **{f"a{i}": i for i in range(500)},
    }
    result = create(world, args)
    assert result["status"] == "memory_save_failed_invalid_args"
    assert "and 495 more" in result["reason"]


@pytest.mark.parametrize(
    ("metadata", "field"),
    [
        ({"category": ["tea\x00"]}, "metadata.category[0]"),
        ({"category": ["tea\ud800"]}, "metadata.category[0]"),
        ({"source_references": {"k\x00": 1}}, "a key of metadata.source_references"),
        ({"source_references": float("nan")}, "metadata.source_references"),
        ({"contradictions": [1, {"x": float("inf")}]}, "metadata.contradictions[1].x"),
        ({"contradictions": float("-inf")}, "metadata.contradictions"),
        ({"decay_rate": float("nan")}, "metadata.decay_rate"),
        ({"decay_rate": float("inf")}, "metadata.decay_rate"),
        ({"contradictions": 2**60}, "metadata.contradictions"),
        ({"contradictions": [[[[[[[[[1]]]]]]]]]}, "nested more than"),
        ({"contradictions": list(range(MAX_METADATA_VALUES))}, "more than"),
        ({"contradictions": "x" * 20_000}, "metadata.contradictions is 20000 characters"),
        ({"contradictions": ["x" * 9_000, "y" * 9_000]}, "larger than"),
        ({"k" * MB: 1}, "a key of metadata is 1000000 characters"),
        ({"k" * 5_000: 1}, "(cut; 5000 characters)"),
    ],
)
def test_unstorable_metadata_is_invalid_args_naming_the_field(
    world: World, metadata: dict[str, Any], field: str
) -> None:
    result = typed(world, {"type": "semantic", "content": "tea", "metadata": metadata})
    assert result["status"] == "memory_save_failed_invalid_args", result
    assert field in result["reason"]
    assert table_counts(world.store) == (0, 0)


@pytest.mark.parametrize("importance", [float("nan"), float("inf"), float("-inf"), 10**400])
def test_non_finite_importance_is_invalid_args(world: World, importance: float) -> None:
    result = typed(world, {"type": "semantic", "content": "tea", "importance": importance})
    assert result["status"] == "memory_save_failed_invalid_args", result
    assert "importance" in result["reason"]


def test_nested_metadata_within_the_limits_is_saved(world: World) -> None:
    deep: Any = 1
    for _ in range(MAX_METADATA_DEPTH - 1):
        deep = [deep]
    result = typed(
        world, {"type": "semantic", "content": "tea", "metadata": {"contradictions": deep}}
    )
    assert result["status"] == "memory_saved_successfully", result


@pytest.mark.parametrize(
    ("tool", "args", "field"),
    [
        (create_long_term_memory_tool, {"memory_scope": "server_wide"}, "memory_content"),
        (create_memory_tool, {"type": "semantic"}, "content"),
    ],
)
def test_surrogates_in_content_are_dropped_and_saved(
    world: World, tool: Any, args: dict[str, Any], field: str
) -> None:
    run = world.run(tool(world.store), {**args, field: "tea\ud800 and\udfff cake"}, world.context())
    assert run.result["status"] == "memory_saved_successfully", run.result
    assert run.result["content"] == "tea and cake"
    row = memory_row(world.store, run.result["memory_id"])
    assert row is not None and row.content == "tea and cake"


def test_content_of_only_surrogates_is_invalid_content(world: World) -> None:
    result = create(world, {"memory_content": "\ud800\udc00", "memory_scope": "server_wide"})
    assert result["status"] == "memory_save_failed_invalid_content"
    assert "memory_content" in result["reason"]


def test_update_with_surrogates_saves_the_clean_text(world: World) -> None:
    saved = create(world, {"memory_content": "tea", "memory_scope": "server_wide"})
    result = update(world, {"memory_id": saved["memory_id"], "memory_content": "green\ud800 tea"})
    assert result["status"] == "memory_updated_successfully", result
    assert result["content"] == "green tea"


@pytest.mark.parametrize("value", ["x", [1], 5, {"memory_content": "smuggled"}])
def test_a_model_argument_named_like_the_packing_slot_gets_invalid_args(
    world: World, value: Any
) -> None:
    result = create(world, {"kioku_reserved_arguments": value})
    assert result["status"] == "memory_save_failed_invalid_args"
    assert "kioku_reserved_arguments" in result["reason"]


def search(world: World, args: dict[str, Any]) -> dict[str, Any]:
    outcome = run_tool_call(
        [search_long_term_memory_tool(world.store)],
        "search_long_term_memory",
        args,
        world.context(),
    )
    assert len(str(outcome.message.content)) < SHORT
    return dict(json.loads(str(outcome.message.content)))


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({"query": "tea\x00"}, "query contains a NUL"),
        ({"query": "tea\ud800"}, "query contains a lone surrogate"),
        ({"query": "t" * MB}, "query is 1000000 characters"),
        ({"query": "tea", "k" * MB: 1}, "(cut; 1000000 characters)"),
        ({"query": "tea", "min_importance": float("nan")}, "min_importance"),
        ({"query": "tea", "limit": float("inf")}, "limit"),
    ],
)
def test_search_bad_input_is_invalid_args(world: World, args: dict[str, Any], field: str) -> None:
    result = search(world, args)
    assert result["status"] == "search_failed_invalid_args", result
    assert field in result["reason"]


@pytest.mark.parametrize("summary", ["tea\ud800 time", "tea\x00 time"])
def test_summary_with_unstorable_characters_is_saved_clean(store: KiokuStore, summary: str) -> None:
    world = make_world(store)
    stm = ShortTermMemory(store, store.checkpointer(), clock=Clock())
    outcome = run_tool_call(
        [update_short_term_memory_tool(stm)],
        "update_short_term_memory",
        {"summary": summary},
        world.context(),
    )
    result = json.loads(str(outcome.message.content))
    assert result["status"] == "short_term_memory_updated_successfully", result
    assert result["summary_length"] == len("tea time")


# The pure rules.


@pytest.mark.parametrize(
    ("value", "problem"),
    [("a\x00", "a NUL character"), ("\ud800", "a lone surrogate"), ("a" * 11, "11 characters")],
)
def test_check_text_names_the_field_and_the_problem(value: str, problem: str) -> None:
    with pytest.raises(ArgumentError, match="^target_user ") as raised:
        check_text("target_user", value, 10)
    assert problem in str(raised.value)
    assert check_text("target_user", "Alice\x01", 10) == "Alice\x01"


def test_unstorable_and_sanitise_agree() -> None:
    """What the check refuses, sanitising removes."""
    for text in ("a\x00b", "a\ud800b", "\udfffab", "a\ud83d\ude00b"):
        assert unstorable(text) is not None
        assert sanitise_content(text) == "ab" and unstorable(sanitise_content(text)) is None
    assert unstorable("a\U0001f600b") is None


@given(st.text(max_size=40), st.integers(min_value=1, max_value=30))
def test_check_content_is_the_first_rule_a_text_breaks(raw: str, max_length: int) -> None:
    """One rule for every write path: sanitised, something shown, within the limit."""
    checked = check_content(raw, max_length)
    assert checked.text == sanitise_content(raw)
    if not checked.text:
        assert checked.fault is ContentFault.EMPTY
    elif not as_data(checked.text):
        assert checked.fault is ContentFault.SHOWS_AS_NOTHING
    elif len(checked.text) > max_length:
        assert checked.fault is ContentFault.TOO_LONG
        assert checked.too_long("content", max_length).startswith(
            f"content is {len(checked.text)} characters; the maximum is {max_length}"
        )
    else:
        assert checked.fault is None and unstorable(checked.text) is None


def test_echo_caps_and_says_so() -> None:
    assert echo("Alice") == "Alice"
    assert echo("x" * 100) == "x" * 100
    assert echo("x" * 101) == "x" * 100 + "… (cut; 101 characters)"
    assert echo("a\x00\ud800") == "a\ufffd\ufffd"


def test_reject_unknown_caps_names() -> None:
    with pytest.raises(ArgumentError) as raised:
        reject_unknown({"q" * MB: 1, "b": 2}, ("query",))
    assert len(str(raised.value)) < 200
    reject_unknown({"query": 1}, ("query",))


def test_check_json_stops_early_on_deep_values() -> None:
    """A value deeper than Python's recursion limit costs one walk to the limit, no recursion."""
    deep: Any = 1
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(ArgumentError, match="nested more than"):
        check_json("metadata", deep)
    assert check_json("metadata", {"a": [1, 2.5, None, True, "x"]}) == {
        "a": [1, 2.5, None, True, "x"]
    }


@pytest.mark.parametrize("value", [{1: "x"}, {"a": {1, 2}}, {"a": (1, 2)}, {"a": b"x"}])
def test_check_json_refuses_what_json_does_not_hold(value: Any) -> None:
    with pytest.raises(ArgumentError, match="metadata"):
        check_json("metadata", value)
