"""What the model sees of the tools: names, descriptions, argument schemas."""

from __future__ import annotations

from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.prebuilt.tool_node import _get_all_injected_args

from kioku import KiokuStore, long_term_memory_tools


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
