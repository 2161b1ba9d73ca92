"""Typed memories through create_memory: validation with clear reasons, stored fields."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from kioku import KiokuStore
from kioku._search.scoring import relevance
from kioku._tools.ltm import create_memory_tool
from tests.helpers import World, make_world, memory_row, run_tool, table_counts


@pytest.fixture
def world(store: KiokuStore) -> World:
    return make_world(store)


def create(world: World, args: dict[str, Any]) -> dict[str, Any]:
    return run_tool(create_memory_tool(world.store), args, world.context()).result


def test_episodic_with_metadata(world: World) -> None:
    result = create(
        world,
        {
            "type": "episodic",
            "content": "{bot} rebooted the kettle",
            "importance": 0.9,
            "metadata": {
                "action_taken": "reboot",
                "emotional_valence": -0.5,
                "result": {"ok": True},
                "event_time": "2026-11-20T10:00:00",
            },
        },
    )
    assert result["status"] == "memory_saved_successfully", result
    row = memory_row(world.store, result["memory_id"])
    assert row is not None
    assert (row.memory_type, row.importance, row.scope, row.server_id) == (
        "episodic",
        0.9,
        "server",
        "srv-a",
    )
    assert row.attributes["action_taken"] == "reboot" and row.attributes["result"] == {"ok": True}
    assert row.attributes["event_time"] == "2026-11-20T10:00:00+00:00"
    assert row.embedding is not None


def test_defaults_per_type(world: World) -> None:
    semantic = memory_row(
        world.store, create(world, {"type": "semantic", "content": "tea is a drink"})["memory_id"]
    )
    assert (
        semantic is not None
        and semantic.attributes["confidence"] == 0.8
        and semantic.importance == 0.5
    )
    strategic = memory_row(
        world.store,
        create(world, {"type": "strategic", "content": "ask before brewing"})["memory_id"],
    )
    assert strategic is not None and strategic.attributes == {
        "confidence_score": 0.7,
        "pattern_description": "ask before brewing",
    }
    procedural = create(
        world,
        {
            "type": "procedural",
            "content": "brew green tea",
            "metadata": {
                "steps": ["heat to 80C", "steep 2 min"],
                "success_count": 3,
                "total_attempts": 4,
                "decay_rate": 0.0,
            },
        },
    )
    row = memory_row(world.store, procedural["memory_id"])
    assert row is not None and row.attributes["success_rate"] == 0.75 and row.decay_rate == 0.0


def test_embedding_argument_is_ignored(world: World) -> None:
    result = create(world, {"type": "semantic", "content": "x", "embedding": [0.1, 0.2]})
    assert result["status"] == "memory_saved_successfully" and result["embedding_ignored"] is True
    row = memory_row(world.store, result["memory_id"])
    assert row is not None and len(row.embedding) == 384


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        ({"content": "x"}, "type must be one of"),
        ({"type": "dream", "content": "x"}, "type must be one of"),
        ({"type": "semantic"}, "content is required"),
        (
            {"type": "semantic", "content": "x", "importance": 1.5},
            "importance must be from 0.0 to 1.0",
        ),
        ({"type": "semantic", "content": "x", "importance": "high"}, "importance must be a number"),
        (
            {"type": "semantic", "content": "x", "metadata": {"confidence": 2}},
            "confidence must be from",
        ),
        ({"type": "semantic", "content": "x", "metadata": {"steps": [1]}}, "memory: steps"),
        ({"type": "semantic", "content": "x", "metadata": "notes"}, "metadata must be an object"),
        (
            {"type": "episodic", "content": "x", "metadata": {"emotional_valence": -3}},
            "emotional_valence",
        ),
        ({"type": "episodic", "content": "x", "metadata": {"event_time": "yesterday"}}, "ISO 8601"),
        ({"type": "procedural", "content": "x"}, "needs metadata.steps"),
        (
            {
                "type": "procedural",
                "content": "x",
                "metadata": {"steps": [1], "success_count": 5, "total_attempts": 2},
            },
            "cannot exceed",
        ),
        ({"type": "semantic", "content": "x", "metadata": {"decay_rate": -1}}, "decay_rate"),
        ({"type": "semantic", "content": "x", "embedding": "vector"}, "embedding"),
        ({"type": "semantic", "content": "x", "scope": "personal"}, "unknown argument"),
    ],
)
def test_invalid_typed_arguments(world: World, args: dict[str, Any], reason: str) -> None:
    result = create(world, args)
    assert result["status"] == "memory_save_failed_invalid_args"
    assert reason in result["reason"]
    assert table_counts(world.store) == (0, 0)


def test_relevance_decays_at_read_time() -> None:
    assert relevance(0.8, 0.01, 0) == pytest.approx(0.8)
    assert relevance(0.8, 0.01, 100) == pytest.approx(0.8 * 0.36788, rel=1e-3)
    assert relevance(0.8, 0.0, 1000) == pytest.approx(0.8)


def test_disabled_server_answers_disabled_before_typed_field_errors(store: KiokuStore) -> None:
    world = make_world(store, self_teaching=False)
    result = create(world, {"type": "semantic", "content": "x", "importance": 1.5})
    assert result["status"] == "memory_save_failed_disabled"
    valid = create(world, {"type": "semantic", "content": "x"})
    assert valid["status"] == "memory_save_failed_disabled"
    assert table_counts(store) == (0, 0)


def test_episodic_fields_take_json_as_the_reference_schema_does(world: World) -> None:
    """action_taken, context and result are jsonb there; verification_status a boolean."""
    result = create(
        world,
        {
            "type": "episodic",
            "content": "deployed the release",
            "metadata": {
                "action_taken": {"command": "deploy", "targets": ["eu", "us"]},
                "context": ["friday", 3],
                "result": None,
                "verification_status": True,
            },
        },
    )
    assert result["status"] == "memory_saved_successfully", result
    row = memory_row(world.store, result["memory_id"])
    assert row is not None
    assert row.attributes["action_taken"] == {"command": "deploy", "targets": ["eu", "us"]}
    assert row.attributes["verification_status"] is True
    refused = create(
        world,
        {
            "type": "episodic",
            "content": "checked the logs",
            "metadata": {"verification_status": "yes"},
        },
    )
    assert refused["status"] == "memory_save_failed_invalid_args"
    assert "verification_status must be true, false or null" in refused["reason"]


def test_null_fields_take_their_defaults_as_in_the_reference(world: World) -> None:
    """The reference reads ``metadata.x || default``: a client sending null gets the default."""
    episode = create(
        world,
        {
            "type": "episodic",
            "content": "{bot} brewed the first pot",
            "metadata": {
                "emotional_valence": None,
                "event_time": None,
                "decayRate": None,
                "result": None,
                "verification_status": None,
            },
        },
    )
    assert episode["status"] == "memory_saved_successfully", episode
    row = memory_row(world.store, episode["memory_id"])
    assert row is not None and row.decay_rate == 0.01
    assert row.attributes["emotional_valence"] == 0.0 and row.attributes["result"] is None
    fact = create(
        world,
        {
            "type": "semantic",
            "content": "hojicha is roasted green tea",
            "metadata": {"category": None, "confidence": None},
        },
    )
    row = memory_row(world.store, fact["memory_id"])
    assert row is not None and row.attributes["confidence"] == 0.8
    assert row.attributes["category"] == []


def test_metadata_size_counts_characters_not_escapes(world: World) -> None:
    # 1,700 CJK characters are 1,7xx characters of JSON (10,2xx only as \\uXXXX escapes).
    result = create(
        world,
        {"type": "episodic", "content": "{bot} wrote a poem", "metadata": {"result": "茶" * 1700}},
    )
    assert result["status"] == "memory_saved_successfully", result


def test_content_that_shows_as_nothing_is_refused(world: World) -> None:
    result = create(world, {"type": "semantic", "content": "\u200b\u2060\ufeff"})
    assert result["status"] == "memory_save_failed_invalid_content", result
    assert "show as nothing" in result["reason"]
    assert table_counts(world.store) == (0, 0)


def test_a_typed_repeat_says_its_metadata_stays(world: World) -> None:
    first = create(world, {"type": "episodic", "content": "{bot} fixed the kettle"})
    again = create(
        world,
        {
            "type": "episodic",
            "content": "{bot} fixed the kettle",
            "metadata": {"verification_status": True},
        },
    )
    assert again["already_saved"] is True and again["memory_id"] == first["memory_id"]
    assert "metadata stay as they were saved" in again["reason"]


def test_a_misspelt_field_is_refused_even_when_null(world: World) -> None:
    result = create(
        world,
        {"type": "episodic", "content": "x happened", "metadata": {"emotional_valance": None}},
    )
    assert result["status"] == "memory_save_failed_invalid_args", result
    assert "emotional_valance" in result["reason"]
    both = create(
        world,
        {
            "type": "semantic",
            "content": "y is so",
            "metadata": {"decay_rate": None, "decayRate": 0.5},
        },
    )
    row = memory_row(world.store, both["memory_id"])
    assert row is not None and row.decay_rate == 0.5


def test_arguments_nested_too_deep_are_refused_not_raised(world: World) -> None:
    deep: Any = 1
    for _ in range(3000):  # far past the interpreter's recursion limit when printed
        deep = [deep]
    result = create(world, {"type": "episodic", "content": "deep", "metadata": {"result": deep}})
    assert result["status"] == "memory_save_failed_invalid_args", result
    assert "arguments_nested_more_than_64_levels" in result["reason"]
    assert table_counts(world.store) == (0, 0)
    # A tool that needs the turn's context first still has it (LangGraph's injected
    # runtime is kept), so it too refuses the argument by name.
    from kioku._tools.search import search_long_term_memory_tool

    search = run_tool(
        search_long_term_memory_tool(world.store), {"query": "tea", "extra": deep}, world.context()
    ).result
    assert search["status"] == "search_failed_invalid_args", search
    assert "arguments_nested_more_than_64_levels" in search["reason"]
    # Called directly, without a graph.
    tool = create_memory_tool(world.store)
    direct = json.loads(tool.run({"type": "semantic", "content": "x", "metadata": deep}))
    assert direct["status"] == "memory_save_failed_invalid_args", direct
    awaited = asyncio.run(tool.arun({"type": "semantic", "content": "x", "metadata": deep}))
    assert json.loads(awaited)["status"] == "memory_save_failed_invalid_args"
