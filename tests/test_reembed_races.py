"""Re-embedding with workers running (issue #39, item 5): whatever the interleaving, a
write ends with a vector of the model the database records or queued, never another
model's vector marked current; a worker switched away from answers as usual."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from sqlalchemy import Engine, text

from kioku import (
    ConfigurationError,
    ContextBudgets,
    KiokuStore,
    create_long_term_memory_tool,
    create_memory_tool,
    update_long_term_memory_tool,
)
from kioku._context_build.build import ContextBuilder
from kioku._db.vectors import halfvec_text, readable_embedder
from kioku._domain.scopes import ServerScope
from kioku._domain.writes import NewMemory
from kioku._embeddings import EmbedderSpec, HashingEmbeddings, embedding_text
from kioku._memory.repository import MemoryRepository
from kioku._recorded_embedder import noted
from kioku._reembed import _switch, reembed
from kioku._tools.search import search_long_term_memory
from tests.helpers import World, make_world, run_tool
from tests.reembed_worker import OLD
from tests.test_reembed import open_store, spec

NEW = spec(32)
"""Another model of the same size as :data:`OLD`."""
WIDER = spec(48)
SAVED, UPDATED = "memory_saved_successfully", "memory_updated_successfully"


def assert_current(engine: Engine, embedder: EmbedderSpec) -> None:
    """Every memory holds a vector ``embedder`` made of its text, or is queued."""
    with engine.connect() as connection:
        rows = connection.execute(
            text("SELECT content, embedding::text, needs_embedding, embedded_with FROM memories")
        ).all()
    assert rows
    for content, vector, queued, model in rows:
        if vector is None:
            assert queued and model is None, content
            continue
        assert (model, queued) == (embedder.model, False), content
        [made] = embedder.embeddings.embed_documents([embedding_text(content)])
        stored = [float(x) for x in vector.strip("[]").split(",")]
        assert _cosine(stored, made) > 0.999, content


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def queued(engine: Engine, content: str) -> bool:
    """Whether the memory ``content`` is queued without a vector."""
    with engine.connect() as connection:
        row = connection.execute(
            text("SELECT embedding IS NULL AND needs_embedding FROM memories WHERE content = :c"),
            {"c": content},
        ).one()
    return bool(row[0])


@pytest.fixture
def old(fresh_database: str) -> Iterator[KiokuStore]:
    """A worker's store, the database set up with :data:`OLD`."""
    store = open_store(fresh_database, OLD)
    store.setup()
    yield store
    store.close()


def switched(old: KiokuStore, to: EmbedderSpec) -> KiokuStore:
    """A store of the ``kioku reembed`` that switches ``old``'s database to ``to``."""
    assert old.settings.database_url is not None
    return open_store(old.settings.database_url, to)


def with_a_memory(
    old: KiokuStore, content: str, to: EmbedderSpec
) -> tuple[World, dict[str, Any], KiokuStore]:
    """A world on ``old`` with ``content`` saved, and the store of a re-embed to ``to``."""
    world = make_world(old)
    answer = save(world, content)
    assert answer["status"] == SAVED
    return world, answer, switched(old, to)


def save(world: World, content: str, *, store: KiokuStore | None = None) -> dict[str, Any]:
    tool = create_long_term_memory_tool(store or world.store)
    arguments = {"memory_content": content, "memory_scope": "server_wide"}
    return run_tool(tool, arguments, world.context()).result


def waiting_for_a_lock(engine: Engine, timeout: float = 20.0) -> None:
    """Return once another session of the database waits for a lock."""
    deadline = time.monotonic() + timeout
    with engine.connect() as connection:
        while time.monotonic() < deadline:
            waiting = connection.execute(
                text(
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                    "AND datname = current_database()"
                )
            ).scalar_one()
            if waiting:
                return
            connection.rollback()  # the activity is read once per transaction
            time.sleep(0.02)
    raise AssertionError("nobody waited for a lock")


def in_thread(work: Callable[[], Any]) -> Callable[[], Any]:
    """Start ``work``; the returned call joins it and gives its result (or raises its error)."""
    result: dict[str, Any] = {}

    def run() -> None:
        try:
            result["value"] = work()
        except BaseException as exc:  # handed to the joining test
            result["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()

    def join() -> Any:
        thread.join(timeout=60)
        assert not thread.is_alive()
        if "error" in result:
            raise result["error"]
        return result["value"]

    return join


def test_the_database_stores_a_vector_only_of_the_model_it_records(old: KiokuStore) -> None:
    vector = halfvec_text([0.5] * 32)
    wide = halfvec_text([0.5] * 48)
    with old.engine.begin() as connection:
        answers = [
            tuple(
                connection.execute(
                    text(
                        "SELECT embedding IS NOT NULL, needs_embedding, embedded_with "
                        "FROM kioku_vector_columns(CAST(:v AS halfvec), :m)"
                    ),
                    {"v": v, "m": m},
                ).one()
            )
            for v, m in [
                (vector, OLD.model),
                (vector, NEW.model),
                (wide, OLD.model),
                (None, OLD.model),
                (vector, None),
            ]
        ]
    assert answers == [
        (True, False, OLD.model),
        (False, True, None),  # another model: queued
        (False, True, None),  # another size
        (False, True, None),  # no vector
        (True, False, None),  # an earlier release's: kept, unlabelled
    ]


def test_a_write_after_a_switch_is_queued_and_the_worker_writes_queued_from_then_on(
    old: KiokuStore,
) -> None:
    world, _, new = with_a_memory(old, "fact before", NEW)
    assert reembed(new).embedded == 1
    # The worker still embeds with OLD: its vector is refused, the memory queued.
    answer = save(world, "fact after the switch")
    assert answer["status"] == SAVED and queued(old.engine, "fact after the switch")
    assert old.deps.recorded.other == (NEW.model, NEW.dimension)
    updated = run_tool(
        update_long_term_memory_tool(old),
        {"memory_id": answer["memory_id"], "memory_content": "fact after, revised"},
        world.context(),
    ).result
    typed = run_tool(
        create_memory_tool(old),
        {"memory_type": "semantic", "importance": 0.8, "memory_content": "typed after the switch"},
        world.context(),
    ).result
    found, _ = search_long_term_memory(old, world.context(), {"query": "fact"})
    assert (updated["status"], typed["status"]) == (UPDATED, SAVED)
    assert found["status"] == "memories_found"
    assert queued(old.engine, "fact after, revised") and queued(
        old.engine, "typed after the switch"
    )
    assert_current(old.engine, NEW)
    again = reembed(new)
    assert (again.embedded, again.stale) == (2, 0)
    assert_current(old.engine, NEW)
    new.close()


@pytest.mark.parametrize("first", ["create", "update", "typed", "search", "build"])
def test_a_worker_meeting_a_column_of_another_size_recovers_by_itself(
    old: KiokuStore, first: str
) -> None:
    world, answer, new = with_a_memory(old, "the office opens at nine", WIDER)
    reembed(new)
    # A worker process that has not learnt of the switch: every entry point recovers.
    worker = KiokuStore(old.engine, settings=old.settings, embedder=OLD)
    context = world.context()
    if first == "create":  # compared with the scope's vectors first: of another size
        assert save(world, "the office closes at five", store=worker)["status"] == SAVED
    elif first == "update":
        arguments = {"memory_id": answer["memory_id"], "memory_content": "it opens at ten"}
        updated = run_tool(update_long_term_memory_tool(worker), arguments, context).result
        assert updated["status"] == UPDATED
    elif first == "typed":
        arguments = {
            "memory_type": "semantic",
            "importance": 0.8,
            "memory_content": "lock the office",
        }
        assert run_tool(create_memory_tool(worker), arguments, context).result["status"] == SAVED
    elif first == "search":
        found, _ = search_long_term_memory(worker, context, {"query": "office"})
        assert found["status"] == "memories_found"
    else:  # memories beyond the block's budget: ranked by the message
        for hour in range(3, 9):
            assert save(world, f"the office was empty at {hour}", store=new)["status"] == SAVED
        builder = ContextBuilder(worker, budgets=ContextBudgets(server_memories=150))
        built = builder.build(context, [HumanMessage("when does the office open?")])
        assert built.retrieval == ("server_memories",) and not built.failed_stages
        assert "opens at nine" in " ".join(item.text for item in built.items)
    assert worker.deps.recorded.other == (WIDER.model, WIDER.dimension)
    assert save(world, "the office is on floor two", store=worker)["status"] == SAVED
    found, _ = search_long_term_memory(worker, context, {"query": "office floor"})
    assert found["status"] == "memories_found"
    assert_current(old.engine, WIDER)
    reembed(new)
    assert_current(old.engine, WIDER)
    with old.engine.connect() as connection:
        assert not connection.scalar(text("SELECT count(*) FROM memories WHERE needs_embedding"))
    worker.access.close()
    new.close()


def _new_memory(world: World, content: str) -> NewMemory:
    [vector] = OLD.embeddings.embed_documents([content])
    return NewMemory(
        scope=ServerScope("srv-a", world.persona.lineage_id),
        content=content,
        server_key="srv-a",
        server_name="Server A",
        limit=1000,
        embedding=vector,
        embedder=OLD.model,
    )


@pytest.mark.parametrize("write", ["create", "update"])
def test_a_write_under_way_when_the_switch_starts_is_queued_by_the_switch(
    old: KiokuStore, write: str
) -> None:
    world, answer, new = with_a_memory(old, "fact to change", NEW)
    with old.transaction() as session:  # the worker's write, not committed yet
        memories = MemoryRepository(session)
        if write == "create":
            assert memories.create_within_limit(_new_memory(world, "fact under way")).outcome
        else:
            scope = ServerScope("srv-a", world.persona.lineage_id)
            outcome = memories.update_in_scope(
                answer["memory_id"],
                scope,
                "fact under way",
                settings_key="srv-a",
                is_dm=False,
                allowed=[True] * 4,
                actor="u-alice",
                persona_id=world.persona.persona_id,
                embedding=OLD.embeddings.embed_documents(["fact under way"])[0],
                embedder=OLD.model,
            )
            assert outcome.updated is not None and not outcome.vector_refused
        done = in_thread(lambda: reembed(new))
        waiting_for_a_lock(old.engine)  # the switch waits for the write
    assert done().stale == 0  # queued by the switch, embedded by the re-embed
    assert_current(old.engine, NEW)
    new.close()


@pytest.mark.parametrize("tool", ["create", "update", "typed"])
def test_a_write_arriving_during_the_switch_waits_for_it_and_is_queued(
    old: KiokuStore, tool: str
) -> None:
    world, answer, new = with_a_memory(old, "fact to change", NEW)
    tools = {
        "create": (create_long_term_memory_tool(old), {"memory_scope": "server_wide"}),
        "update": (update_long_term_memory_tool(old), {"memory_id": answer["memory_id"]}),
        "typed": (create_memory_tool(old), {"memory_type": "semantic", "importance": 0.8}),
    }
    made, arguments = tools[tool]
    arguments = {**arguments, "memory_content": "fact arriving"}
    with new.engine.begin() as connection:
        _switch(new.deps, connection, NEW)
        written = in_thread(lambda: run_tool(made, arguments, world.context()).result)
        waiting_for_a_lock(old.engine)  # the write waits for the switch
    assert written()["status"] in (SAVED, UPDATED)
    assert queued(old.engine, "fact arriving")
    assert old.deps.recorded.other == (NEW.model, NEW.dimension)
    assert_current(old.engine, NEW)
    new.close()


def test_a_write_waits_for_a_change_of_the_recorded_model_under_way(old: KiokuStore) -> None:
    """The model is read under a share lock: the check does not rest on the table lock."""
    world = make_world(old)
    with old.engine.begin() as connection:
        connection.execute(
            text("UPDATE kioku_meta SET value = :m WHERE key = 'embedding_model'"),
            {"m": NEW.model},
        )
        written = in_thread(lambda: save(world, "fact arriving"))
        waiting_for_a_lock(old.engine)
    assert written()["status"] == SAVED and queued(old.engine, "fact arriving")


def test_a_worker_that_only_reads_learns_of_a_switch_to_a_model_of_the_same_size(
    old: KiokuStore,
) -> None:
    """A same-size switch meets no error: the turn state every context build reads tells
    the worker, which then ranks by text (its vectors no longer compare with the stored
    ones) until the database records its embedder again."""
    world, _, new = with_a_memory(old, "the office opens at nine", NEW)
    for hour in range(3, 9):
        assert save(world, f"the office was empty at {hour}")["status"] == SAVED
    worker = KiokuStore(old.engine, settings=old.settings, embedder=OLD)
    builder = ContextBuilder(worker, budgets=ContextBudgets(server_memories=150))
    question = [HumanMessage("when does the office open?")]
    context = world.context()
    assert builder.build(context, question).retrieval == ("server_memories",)
    assert worker.deps.recorded.other is None
    reembed(new)
    built = builder.build(context, question)
    assert worker.deps.recorded.other == (NEW.model, NEW.dimension)
    assert built.retrieval == ("server_memories",) and not built.failed_stages
    assert "opens at nine" in " ".join(item.text for item in built.items)
    reembed(old)  # and back: the next build notices that too
    builder.build(context, question)
    assert worker.deps.recorded.other is None
    worker.access.close()
    new.close()


def test_a_worker_that_only_searches_learns_of_a_switch_to_a_model_of_the_same_size(
    old: KiokuStore,
) -> None:
    """The search tool reads the recorded embedder with the server's settings (an MCP
    server no agent turn runs through learns of the switch there) and then searches by text."""
    world, _, new = with_a_memory(old, "the office opens at nine", NEW)
    worker = KiokuStore(old.engine, settings=old.settings, embedder=OLD)
    context = world.context()
    found, _ = search_long_term_memory(worker, context, {"query": "office"})
    assert found["status"] == "memories_found" and worker.deps.recorded.other is None
    reembed(new)
    found, _ = search_long_term_memory(worker, context, {"query": "office"})
    assert found["status"] == "memories_found"
    assert worker.deps.recorded.other == (NEW.model, NEW.dimension)
    worker.access.close()
    new.close()


def test_a_read_begun_before_a_newer_one_changes_nothing(old: KiokuStore) -> None:
    """A turn state read just before a switch, noted after another thread saw the switch,
    does not take the switch back; a record the turn state cannot read counts as none."""
    worker = KiokuStore(old.engine, settings=old.settings, embedder=OLD)
    before = time.monotonic()
    assert not noted(worker.deps, (NEW.model, NEW.dimension), time.monotonic())
    assert noted(worker.deps, (OLD.model, OLD.dimension), before) is False
    assert worker.deps.recorded.other == (NEW.model, NEW.dimension)
    assert noted(worker.deps, (OLD.model, OLD.dimension), time.monotonic())
    assert worker.deps.recorded.other is None
    assert readable_embedder(["some-model", "not a number"]) is None
    worker.access.close()


def test_a_worker_switched_back_to_resumes_writing_vectors(
    old: KiokuStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = make_world(old)
    new = switched(old, NEW)
    reembed(new)
    assert save(world, "fact while switched away")["status"] == SAVED
    assert old.deps.recorded.other is not None
    reembed(old)  # and back
    monkeypatch.setattr("kioku._recorded_embedder.RECHECK_SECONDS", 0.0)
    assert save(world, "fact once back")["status"] == SAVED
    assert old.deps.recorded.other is None and not queued(old.engine, "fact once back")
    assert_current(old.engine, OLD)
    new.close()


def test_a_reembed_whose_model_is_switched_away_under_it_stops(old: KiokuStore) -> None:
    world = make_world(old)
    for i in range(4):
        assert save(world, f"fact {i}")["status"] == SAVED
    calls = {"n": 0}

    class SwitchedMeanwhile(HashingEmbeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            calls["n"] += 1
            if calls["n"] == 3:  # the trial, the first batch, then another re-embed's switch
                with old.engine.begin() as connection:
                    connection.execute(
                        text("UPDATE kioku_meta SET value = 'other' WHERE key = 'embedding_model'")
                    )
            return super().embed_documents(texts)

    racing = switched(old, EmbedderSpec(SwitchedMeanwhile(32), NEW.model, 32))
    with pytest.raises(ConfigurationError, match="no longer records hashing-32"):
        reembed(racing, batch_size=2)
    with old.engine.connect() as connection:
        stored = connection.scalar(
            text("SELECT count(*) FROM memories WHERE embedding IS NOT NULL")
        )
    assert stored == 2  # the first batch; the second was refused and stays queued
    racing.close()
