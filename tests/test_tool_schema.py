"""What the model sees of the tools: names, descriptions, argument schemas."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.prebuilt.tool_node import _get_all_injected_args
from syrupy.assertion import SnapshotAssertion

from kioku import KiokuStore, long_term_memory_tools, memory_tools
from kioku._mcp_server import GetArgs
from kioku._memory.arguments import (
    ArgumentError,
    CreateArgs,
    ToolArguments,
    UpdateArgs,
    validated,
)
from kioku._memory.create_typed import ARGUMENTS as TYPED_ARGUMENTS
from kioku._memory.typed import MEMORY_TYPES
from kioku._memory.typed_arguments import CreateMemoryArgs
from kioku._tools.schema import model_facing_schema
from kioku._tools.search import SearchArgs
from kioku._tools.stm import StmArgs


def test_model_facing_schemas_hide_injected_parameters(store: KiokuStore) -> None:
    create, update = long_term_memory_tools(store)
    for tool in (create, update):
        spec = convert_to_openai_tool(tool)["function"]
        assert "runtime" not in spec["parameters"]["properties"]
        assert "runtime" not in spec["parameters"].get("required", [])
        assert isinstance(tool.tool_call_schema, dict)
        assert "runtime" not in tool.tool_call_schema["properties"]
        # ...and LangGraph's ToolNode recognises the runtime as injected.
        assert _get_all_injected_args(tool).runtime == "runtime"

    create_spec = convert_to_openai_tool(create)["function"]
    assert create_spec["name"] == "create_long_term_memory"
    assert set(create_spec["parameters"]["properties"]) == {
        "memory_content",
        "memory_scope",
        "target_user",
        "event_time",
    }
    assert create_spec["parameters"]["required"] == ["memory_content", "memory_scope"]
    assert create_spec["parameters"]["properties"]["memory_scope"]["enum"] == [
        "server_wide",
        "target_user",
    ]
    for phrase in ("{user}", "{bot}", "third person", "identifying"):
        assert phrase in create_spec["description"]

    update_spec = convert_to_openai_tool(update)["function"]
    assert update_spec["name"] == "update_long_term_memory"
    assert set(update_spec["parameters"]["properties"]) == {
        "memory_id",
        "memory_content",
        "target_user",
        "event_time",
    }
    assert update_spec["parameters"]["properties"]["memory_id"]["type"] == "integer"
    assert "empty string deletes" in update_spec["description"]


def test_model_cannot_forge_the_runtime(store: KiokuStore) -> None:
    from tests.helpers import make_world, run_tool

    world = make_world(store)
    create, _ = long_term_memory_tools(store)
    run = run_tool(
        create,
        {"memory_content": "x", "memory_scope": "server_wide", "runtime": {"context": "evil"}},
        world.context(),
    )
    assert run.result["status"] == "memory_saved_successfully"


# The schemas are derived from the arguments' pydantic models (issue #37).

MODELS = {
    "create_long_term_memory": CreateArgs,
    "update_long_term_memory": UpdateArgs,
    "create_memory": CreateMemoryArgs,
    "search_long_term_memory": SearchArgs,
    "update_short_term_memory": StmArgs,
}


def test_each_tool_advertises_its_argument_model(store: KiokuStore) -> None:
    tools = memory_tools(store)
    assert {tool.name for tool in tools} == set(MODELS)
    for tool in tools:
        assert tool.args_schema == model_facing_schema(MODELS[tool.name]), tool.name


def test_model_facing_schemas(snapshot: SnapshotAssertion) -> None:
    """The schema text the model sees, every tool (MCP's ``get_memory`` too)."""
    for name, model in {**MODELS, "get_memory": GetArgs}.items():
        schema = model_facing_schema(model)
        assert schema == snapshot(name=name)
        text = json.dumps(schema)
        assert '"title": "' not in text.replace(f'"title": "{name}"', ""), name
        assert "anyOf" not in text and "additionalProperties" not in text, name
        assert all(p.get("description") for p in schema["properties"].values()), name


def test_the_create_memory_model_matches_its_flow() -> None:
    """``create_memory`` still checks calls itself: its model must name what the flow takes."""
    schema = model_facing_schema(CreateMemoryArgs)
    assert set(schema["properties"]) == TYPED_ARGUMENTS
    assert tuple(schema["properties"]["memory_type"]["enum"]) == MEMORY_TYPES
    search = model_facing_schema(SearchArgs)["properties"]
    assert tuple(search["memory_type"]["enum"]) == MEMORY_TYPES


@pytest.mark.parametrize(
    ("model", "arguments", "reason"),
    [
        (CreateArgs, {}, "memory_content is required and must be a string"),
        (CreateArgs, {"memory_content": 5, "memory_scope": 1}, "memory_content is required"),
        (CreateArgs, {"memory_content": "x"}, "memory_scope must be 'server_wide' or"),
        (CreateArgs, {"memory_content": "x", "memory_scope": b"server_wide"}, "memory_scope"),
        (CreateArgs, {"memory_content": " ", "memory_scope": "server_wide"}, "is blank"),
        (
            CreateArgs,
            {"memory_content": "x", "memory_scope": "target_user", "target_user": "  "},
            "target_user (the person's name) is required",
        ),
        (
            CreateArgs,
            {"memory_content": "x", "memory_scope": "server_wide", "target_user": "a" * 300},
            "target_user is 300 characters; the maximum is 256",
        ),
        (
            CreateArgs,
            {"memory_content": "x", "memory_scope": "server_wide", "target_user": "A\ud800"},
            "target_user contains a lone surrogate",
        ),
        (
            CreateArgs,
            {"memory_content": "x", "memory_scope": "server_wide", "event_time": "soon"},
            "event_time must be an ISO 8601 date",
        ),
        (CreateArgs, {"memory_content": "x", "memory_scope": "server_wide", "k": 1}, "unknown"),
        (UpdateArgs, {"memory_id": True, "memory_content": ""}, "memory_id must be the positive"),
        (UpdateArgs, {"memory_id": "ID:0", "memory_content": ""}, "memory_id must be the positive"),
        (UpdateArgs, {"memory_id": 3}, "(an empty string deletes the memory)"),
        (SearchArgs, {"query": "tea", "min_importance": float("nan")}, "min_importance must be"),
        (SearchArgs, {"query": "tea", "min_importance": True}, "min_importance must be"),
        (SearchArgs, {"query": "tea", "limit": 2.0}, "limit must be a whole number"),
        (SearchArgs, {"query": "tea", "limit": 21}, "limit must be a whole number from 1 to 20"),
        (SearchArgs, {"query": "tea", "memory_type": "dream"}, "memory_type must be one of"),
        (SearchArgs, {"query": "t" * 1001}, "query is 1001 characters; the maximum is 1000"),
        (
            SearchArgs,
            {"query": "tea", "since": "2025-05-02", "until": "2025-05-01"},
            "since must be before until",
        ),
        (StmArgs, {"summary": None}, "summary is required"),
        (GetArgs, {"memory_id": 1, "server_id": "other"}, "unknown argument(s) server_id"),
    ],
)
def test_a_validation_error_becomes_one_reason(
    model: type[ToolArguments], arguments: dict[str, Any], reason: str
) -> None:
    with pytest.raises(ArgumentError) as raised:
        validated(model, arguments)
    assert reason in str(raised.value)
    assert len(str(raised.value)) < 300


def test_validated_arguments_keep_their_meaning() -> None:
    search = validated(SearchArgs, {"query": " tea ", "limit": None, "min_importance": 1})
    assert (search.query, search.limit, search.min_importance) == ("tea", 5, 1.0)
    update = validated(UpdateArgs, {"memory_id": "ID:7", "memory_content": "", "target_user": ""})
    assert (update.memory_id, update.content, update.target_user) == (7, "", None)
    created = validated(
        CreateArgs,
        {"memory_content": "x", "memory_scope": "server_wide", "event_time": "2025-05-08"},
    )
    assert created.event_time is not None and created.event_time.isoformat().startswith("2025")
