"""``kioku.KiokuLangGraphStore`` against what an attacker tried: concurrent batches across
scopes, privacy, length, unindexed values, export, the owner rule, server keys and bad
input (each a one-line error, nothing written)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.store.base import InvalidNamespaceError, PutOp
from sqlalchemy import text

from kioku import (
    ConfigurationError,
    ContextBuilder,
    ItemRefusedError,
    KiokuLangGraphStore,
    KiokuSettings,
    KiokuStore,
    PersonalScope,
    PrivacyLevel,
    ServerScope,
    TurnContext,
)
from kioku._tools.search import search_long_term_memory


def _count(store: KiokuStore, sql: str) -> int:
    with store.engine.connect() as connection:
        return int(connection.execute(text(sql)).scalar_one())


def _shown(store: KiokuStore, user_id: str, query: str) -> str:
    """Everything kioku shows a model of ``user_id``'s memories: context and search tool."""
    context = TurnContext.for_user(user_id, thread_id=f"t-{user_id}")
    built = ContextBuilder(store).build(context, [HumanMessage(query)], ltm_intent=True)
    payload, _ = search_long_term_memory(store, context, {"query": query, "limit": 20})
    return "\n".join(item.text for item in built.items) + json.dumps(payload)


def _crossed_batches(lg: KiokuLangGraphStore, rounds: int) -> list[str]:
    """Two threads at once, each putting one item of user u and one of v, in crossed scope
    order (the item order agrees); every other round the scopes' rows exist already."""
    errors: list[str] = []
    for round in range(rounds):
        u, v = f"u{round}", f"v{round}"
        if round % 2:
            for namespace in (("a", u), ("b", v)):
                lg.put(namespace, "k", {"x": 0})
        one = [PutOp(("a", u), "k", {"x": 1}), PutOp(("b", v), "k", {"x": 1})]
        two = [PutOp(("a", v), "k", {"x": 2}), PutOp(("b", u), "k", {"x": 2})]
        start = threading.Barrier(2)

        def run(ops: list[PutOp], start: threading.Barrier = start) -> None:
            start.wait()
            try:
                lg.batch(ops)
            except Exception as exc:  # noqa: BLE001 - the test reports any failure
                errors.append(f"{type(exc).__name__}: {exc}")

        threads = [threading.Thread(target=run, args=(ops,)) for ops in (one, two)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    return errors


def test_crossed_batches_over_two_scopes_never_deadlock(store: KiokuStore) -> None:
    assert _crossed_batches(KiokuLangGraphStore(store, user_label=1), 25) == []
    assert _count(store, "SELECT count(*) FROM langgraph_items") == 100


def test_crossed_batches_never_deadlock_behind_pgbouncer(pooled_database: str) -> None:
    settings = KiokuSettings(database_url=pooled_database, embeddings="hashing")
    with KiokuStore.open(settings) as pooled:
        assert _crossed_batches(KiokuLangGraphStore(pooled, user_label=1), 10) == []


@pytest.mark.parametrize("level", [PrivacyLevel.PARTIAL, PrivacyLevel.FULL])
def test_personal_items_follow_kiokus_privacy_rule(store: KiokuStore, level: PrivacyLevel) -> None:
    with store.accounts() as accounts:
        accounts.upsert_user("carol", "Carol", privacy=level)
    lg = KiokuLangGraphStore(store, user_label=1, index={"fields": ["content"]})
    ops = [
        PutOp(("memories", "dan"), "k", {"content": "dan likes tea"}),
        PutOp(("memories", "carol"), "k", {"content": "carol is pregnant"}),
    ]
    with pytest.raises(ItemRefusedError, match=f"privacy level {level.name}") as refused:
        lg.batch(ops)
    assert isinstance(refused.value, ValueError) and "\n" not in str(refused.value)
    assert _count(store, "SELECT count(*) FROM memories") == 0
    assert lg.search(("memories",)) == []
    lg.put(("memories", "dan"), "k", {"content": "dan likes tea"})  # MINIMAL: kept
    lg.delete(("memories", "carol"), "k")  # a delete is never refused


def test_an_existing_item_of_a_person_turned_private_cannot_change(store: KiokuStore) -> None:
    lg = KiokuLangGraphStore(store, user_label=1, index={"fields": ["content"]})
    lg.put(("memories", "erin"), "k", {"content": "erin likes tea"})
    with store.accounts() as accounts:
        accounts.upsert_user("erin", "Erin", privacy=PrivacyLevel.FULL)
    with pytest.raises(ItemRefusedError, match="FULL"):
        lg.put(("memories", "erin"), "k", {"content": "erin likes coffee"})
    lg.delete(("memories", "erin"), "k")
    assert lg.get(("memories", "erin"), "k") is None


def test_indexed_text_is_capped_at_kiokus_memory_length(store: KiokuStore) -> None:
    lg = KiokuLangGraphStore(store, user_label=1, index={"fields": ["content"]})
    limit = store.deps.settings.max_memory_length
    with pytest.raises(ItemRefusedError, match=f"at most {limit} \\(MAX_MEMORY_LENGTH\\)"):
        lg.put(("memories", "alice"), "huge", {"content": "blah " * 20000})
    assert _count(store, "SELECT count(*) FROM memories") == 0
    lg.put(("memories", "alice"), "ok", {"content": "x" * limit, "blob": "y" * 100_000})
    lg.put(("memories", "alice"), "raw", {"content": "z " * 50_000}, index=False)
    item = lg.get(("memories", "alice"), "raw")
    assert item is not None and len(item.value["content"]) == 100_000


def test_only_indexed_text_reaches_a_model(store: KiokuStore) -> None:
    lg = KiokuLangGraphStore(store, user_label=1, index={"fields": ["content"]})
    lg.put(("memories", "alice"), "m", {"content": "likes zebra tea"})
    state = {"oauth_token": "sk-live-123", "content": "zebra secret"}
    lg.put(("memories", "alice"), "state", state, index=False)
    lg.put(("profile", "alice"), "p", {"email": "alice@example.com zebra"})  # no 'content'
    shown = _shown(store, "alice", "zebra tea")
    assert "likes zebra tea" in shown
    assert "sk-live-123" not in shown and "zebra secret" not in shown
    assert "alice@example.com" not in shown and "sha256" not in shown
    assert [m.content for m in store.list_memories(user_id="alice")] == ["likes zebra tea"]
    # the store keeps them: get, listing and filters, not a search with a query
    assert {r.key for r in lg.search(("memories", "alice"))} == {"m", "state"}
    assert [
        r.key for r in lg.search(("profile",), filter={"email": "alice@example.com zebra"})
    ] == ["p"]
    assert [r.key for r in lg.search(("memories", "alice"), query="zebra secret")] == ["m"]
    lg.put(("memories", "alice"), "state", {**state, "oauth_token": "sk-live-456"}, index=False)
    lg.put(("memories", "alice"), "state", {"content": "now indexed"})
    assert _actions(store, "state") == ["create", "update", "update"]  # every change
    assert "sk-live" not in _actions(store, "state", texts=True)
    assert "now indexed" in _shown(store, "alice", "now indexed")


def _actions(store: KiokuStore, key: str, *, texts: bool = False) -> Any:
    """The history of item ``key``'s memory: its actions, or all its texts as JSON."""
    with store.engine.connect() as connection:
        rows = connection.execute(
            text(
                "SELECT action, old_content, new_content FROM memory_history "
                "WHERE memory_id = (SELECT memory_id FROM langgraph_items WHERE key = :k) "
                "ORDER BY id"
            ),
            {"k": key},
        ).all()
    return json.dumps([list(row) for row in rows]) if texts else [row[0] for row in rows]


def test_export_has_the_persons_items(store: KiokuStore, kioku_cli: Callable[..., str]) -> None:
    lg = KiokuLangGraphStore(store, user_label=1, index={"fields": ["content"]})
    value = {"content": "likes tea", "phone": "+1-555-0100"}
    lg.put(("memories", "alice"), "k", value)
    lg.put(("memories", "alice"), "raw", {"ssn": "123-45-6789"}, index=False)
    lg.put(("memories", "bob"), "k", {"content": "bob's"})
    lg.put(("shared",), "k", {"content": "server-wide"})
    items = store.export_user("alice")["langgraph_store_items"]
    assert [(i["namespace"], i["key"], i["value"]) for i in items] == [
        (["memories", "alice"], "k", value),
        (["memories", "alice"], "raw", {"ssn": "123-45-6789"}),
    ]
    assert all(i["created_at"] and i["updated_at"] for i in items)
    out = kioku_cli("export", "--user", "alice")
    assert "555-0100" in out and "123-45-6789" in out and "bob's" not in out
    store.erase_user("alice")
    assert store.export_user("alice")["langgraph_store_items"] == []


def test_the_owner_rule_must_be_chosen(store: KiokuStore) -> None:
    with pytest.raises(ConfigurationError, match="user_label=1 for LangMem") as missing:
        KiokuLangGraphStore(store)
    assert "\n" not in str(missing.value)
    with pytest.raises(ConfigurationError, match="not both"):
        KiokuLangGraphStore(store, user_label=1, scope=lambda ns: ServerScope("s", 0))
    KiokuLangGraphStore(store, user_label=None).put(("memories", "alice"), "k", {"x": 1})
    assert _count(store, "SELECT count(*) FROM memories WHERE server_id = 'langgraph'") == 1


def test_server_ids_become_kiokus_server_keys(store: KiokuStore) -> None:
    lg = KiokuLangGraphStore(store, user_label=None, server_id="dm:c42")
    lg.put(("notes",), "k", {"content": "x"})
    tenants = KiokuLangGraphStore(store, scope=lambda ns: ServerScope(ns[0], 0))
    tenants.put(("dm:c7",), "k", {"content": "y"})
    with store.engine.connect() as connection:
        keys = connection.execute(text("SELECT server_id FROM memories ORDER BY id")).scalars()
        assert list(keys) == ["kioku-server:dm:c42", "kioku-server:dm:c7"]
    assert store.erase_server("dm:c42").memories_deleted == 1
    assert store.erase_server("dm:c7").memories_deleted == 1
    assert lg.get(("notes",), "k") is None and tenants.get(("dm:c7",), "k") is None


BAD_STORES: dict[str, Callable[[KiokuStore], object]] = {
    "index list": lambda s: KiokuLangGraphStore(s, user_label=None, index=["content"]),  # type: ignore[arg-type]
    "label str": lambda s: KiokuLangGraphStore(s, user_label="1"),  # type: ignore[arg-type]
    "label float": lambda s: KiokuLangGraphStore(s, user_label=1.5),  # type: ignore[arg-type]
    "label bool": lambda s: KiokuLangGraphStore(s, user_label=True),
    "server int": lambda s: KiokuLangGraphStore(s, user_label=None, server_id=123),  # type: ignore[arg-type]
    "engine": lambda s: KiokuLangGraphStore(s.engine, user_label=None),  # type: ignore[arg-type]
    "scope str": lambda s: KiokuLangGraphStore(s, scope="x"),  # type: ignore[arg-type]
}


@pytest.mark.parametrize("make", BAD_STORES.values(), ids=BAD_STORES.keys())
def test_a_bad_store_is_refused_on_one_line(
    store: KiokuStore, make: Callable[[KiokuStore], object]
) -> None:
    with pytest.raises(ConfigurationError) as refused:
        make(store)
    assert "\n" not in str(refused.value)


def _ops(lg: KiokuLangGraphStore) -> dict[str, Callable[[], object]]:
    big = "".join(chr(0x4E00 + n % 5000) for n in range(1000))  # 3,000 bytes
    return {
        "long key": lambda: lg.put(("ns",), big, {"x": 1}),
        "long label": lambda: lg.put(("ns", big), "k", {"x": 1}),
        "many labels": lambda: lg.get(("a",) * 1000, "k"),
        "surrogate label": lambda: lg.put(("q\ud800",), "k", {"x": 1}),
        "surrogate key": lambda: lg.put(("q",), "k\ud800", {"x": 1}),
        "surrogate query": lambda: lg.search(("q",), query="\ud800"),
        "surrogate filter": lambda: lg.search(("q",), filter={"s": "\ud800"}),
        "NUL filter key": lambda: lg.search(("q",), filter={"s\x00": 1}),
        "NUL filter value": lambda: lg.search(("q",), filter={"s": "a\x00"}),
        "NUL value key": lambda: lg.put(("q",), "k", {"k\x00": 1}),
        "int value key": lambda: lg.put(("q",), "k", {1: "x"}),  # type: ignore[dict-item]
        "nested bool key": lambda: lg.put(("q",), "k", {"a": {True: "x"}}),
        "str namespace": lambda: lg.put("memories", "k", {"x": 1}),  # type: ignore[arg-type]
        "index True": lambda: lg.put(("q",), "k", {"x": 1}, index=True),  # type: ignore[arg-type]
        "filter list": lambda: lg.search(("q",), filter=[("a", 1)]),  # type: ignore[arg-type]
        "query int": lambda: lg.search(("q",), query=5),  # type: ignore[arg-type]
        "limit bool": lambda: lg.search(("q",), limit=True),
        "limit negative": lambda: lg.search(("q",), limit=-1),
        "depth str": lambda: lg.list_namespaces(max_depth="2"),  # type: ignore[arg-type]
    }


def test_bad_input_is_one_line_and_writes_nothing(store: KiokuStore) -> None:
    lg = KiokuLangGraphStore(store, user_label=None)
    for name, call in _ops(lg).items():
        with pytest.raises((ConfigurationError, InvalidNamespaceError)) as refused:
            call()
        assert isinstance(refused.value, ValueError | ConfigurationError), name
        assert "\n" not in str(refused.value), name
    assert _count(store, "SELECT count(*) FROM memories") == 0


def test_a_bad_scope_from_the_rule_is_refused(store: KiokuStore) -> None:
    bad: list[Callable[[tuple[str, ...]], Any]] = [
        lambda ns: PersonalScope(5, 0),  # type: ignore[arg-type]
        lambda ns: ServerScope("s", -1),
        lambda ns: ServerScope("s", True),
        lambda ns: ns[5],  # the rule itself fails
    ]
    for rule in bad:
        with pytest.raises(ConfigurationError, match="scope rule"):
            KiokuLangGraphStore(store, scope=rule).put(("a",), "k", {"x": 1})
    assert _count(store, "SELECT count(*) FROM memories") == 0


def test_a_database_without_setup_says_so(fresh_database: str) -> None:
    plain = KiokuStore.open(KiokuSettings(database_url=fresh_database, embeddings="hashing"))
    try:
        lg = KiokuLangGraphStore(plain, user_label=None)
        with pytest.raises(ConfigurationError, match=r"run store\.setup\(\)"):
            lg.put(("a",), "k", {"x": 1})
        with pytest.raises(ConfigurationError, match=r"run store\.setup\(\)"):
            lg.get(("a",), "k")
    finally:
        plain.close()


def test_values_keep_what_they_say(store: KiokuStore) -> None:
    lg = KiokuLangGraphStore(store, user_label=None)
    value = {"a": "\\u0000 is how JSON writes NUL", "n": {"b": [1, "\\x00"]}}
    lg.put(("v",), "k", value)
    item = lg.get(("v",), "k")
    assert item is not None and item.value == value
    with pytest.raises(ItemRefusedError, match="NUL"):
        lg.put(("v",), "k", {"a": ["x\x00"]})
