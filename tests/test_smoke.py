from tests.helpers import make_world, run_tool
from toolkit import KiokuStore, create_long_term_memory_tool


def test_create_server_memory(store: KiokuStore) -> None:
    world = make_world(store)
    run = run_tool(
        create_long_term_memory_tool(store),
        {"memory_content": "{user} likes tea", "memory_scope": "server_wide"},
        world.context(),
    )
    assert run.result["status"] == "memory_saved_successfully", run.result
    print(run.result, run.custom, world.notices)
