"""``kioku.KiokuLangGraphStore`` beyond most ported PostgresStore cases: the cases of
LangGraph's base store tests (``libs/checkpoint/tests/test_store.py``), the last two
PostgresStore ones, and what kioku adds: scopes, history, erasure, no leaks across
namespaces, filters, refused input."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from langgraph.store.base import InvalidNamespaceError, PutOp, SearchOp
from sqlalchemy import text

from kioku import (
    ConfigurationError,
    KiokuLangGraphStore,
    KiokuStore,
    PersonalScope,
    ServerScope,
)


def _history(store: KiokuStore) -> list[tuple[str, str | None, str | None, str | None]]:
    with store.engine.connect() as connection:
        rows = connection.execute(
            text(
                "SELECT action, old_content, new_content, owner_id FROM memory_history ORDER BY id"
            )
        )
        return [tuple(row) for row in rows]


def _owners(store: KiokuStore) -> dict[str, tuple[str, str | None, str | None]]:
    with store.engine.connect() as connection:
        rows = connection.execute(
            text(
                "SELECT i.key, m.scope, m.server_id, m.user_id FROM langgraph_items AS i "
                "JOIN memories AS m ON m.id = i.memory_id"
            )
        )
        return {row.key: (row.scope, row.server_id, row.user_id) for row in rows}


# libs/checkpoint/tests/test_store.py ---------------------------------------------------------


def test_list_namespaces_basic(store: KiokuStore) -> None:
    lg = KiokuLangGraphStore(store, user_label=None)
    namespaces = [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
        ("users", "123"),
        ("users", "456", "settings"),
        ("admin", "users", "789"),
    ]
    for i, ns in enumerate(namespaces):
        lg.put(ns, f"id_{i}", {"data": f"value_{i:02d}"})
    under_ab = [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f")]
    assert lg.list_namespaces(prefix=("a", "b")) == under_ab
    assert lg.list_namespaces(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert lg.list_namespaces(prefix=("a",), suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert lg.list_namespaces(prefix=("a", "b"), max_depth=3) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("a", "b", "f"),
    ]
    assert lg.list_namespaces(prefix=("a", "b"), limit=2) == under_ab[:2]
    assert lg.list_namespaces(prefix=("a", "b"), offset=2) == under_ab[2:]
    assert lg.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert lg.list_namespaces(suffix=("*", "f")) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
    ]
    assert lg.list_namespaces(prefix=("nonexistent",)) == []
    assert lg.list_namespaces(prefix=("users", "123")) == [("users", "123")]


def test_list_namespaces_with_wildcards(store: KiokuStore) -> None:
    lg = KiokuLangGraphStore(store, user_label=None)
    for i, ns in enumerate(
        [
            ("users", "123"),
            ("users", "456"),
            ("users", "789", "settings"),
            ("admin", "users", "789"),
            ("guests", "123"),
            ("guests", "456", "preferences"),
        ]
    ):
        lg.put(ns, f"id_{i}", {"data": f"value_{i:02d}"})
    assert lg.list_namespaces(prefix=("users", "*")) == [
        ("users", "123"),
        ("users", "456"),
        ("users", "789", "settings"),
    ]
    assert lg.list_namespaces(suffix=("*", "preferences")) == [("guests", "456", "preferences")]
    assert lg.list_namespaces(prefix=("*", "users"), suffix=("*", "settings")) == []


def test_list_namespaces_pagination_depth_and_empty(store: KiokuStore) -> None:
    lg = KiokuLangGraphStore(store, user_label=None)
    assert lg.list_namespaces() == []
    for i in range(20):
        lg.put(("namespace", f"sub_{i:02d}"), f"id_{i:02d}", {"data": i})
    for offset in (0, 5, 15):
        expected = [("namespace", f"sub_{i:02d}") for i in range(offset, offset + 5)]
        assert lg.list_namespaces(prefix=("namespace",), limit=5, offset=offset) == expected
    for i, ns in enumerate([("a", "b", "c", "d"), ("a", "b", "f"), ("a", "g"), ("h", "i", "j")]):
        lg.put(ns, f"id_{i}", {"data": i})
    shallow = lg.list_namespaces(max_depth=2)
    assert shallow[:3] == [("a", "b"), ("a", "g"), ("h", "i")] and len(shallow) == 23


def test_cannot_put_empty_namespace(store: KiokuStore) -> None:
    asyncio.run(_cannot_put_empty_namespace(KiokuLangGraphStore(store, user_label=None)))


async def _cannot_put_empty_namespace(lg: KiokuLangGraphStore) -> None:
    doc = {"foo": "bar"}
    for bad in [(), ("the", "thing.about"), ("some", "fun", ""), ("langgraph", "foo")]:
        with pytest.raises(InvalidNamespaceError):
            lg.put(bad, "foo", doc)
        with pytest.raises(InvalidNamespaceError):
            await lg.aput(bad, "foo", doc)
    namespace = ("foo", "langgraph", "foo")
    await lg.aput(namespace, "bar", doc)
    assert (await lg.aget(namespace, "bar")) is not None
    assert (await lg.asearch(namespace, query="bar"))[0].value == doc
    await lg.adelete(namespace, "bar")
    assert (await lg.aget(namespace, "bar")) is None
    # Past the public put: LangGraph's stores accept a "langgraph" root in a PutOp.
    await lg.abatch([PutOp(("langgraph", "foo"), "bar", doc)])
    assert [item.value for item in await lg.asearch(("langgraph", "foo"))] == [doc]
    with pytest.raises(InvalidNamespaceError):
        lg.batch([PutOp((), "bar", doc)])


def test_async_batched_vector_search(store: KiokuStore) -> None:
    """Adapted from ``test_async_batched_vector_search_concurrent``: puts, deletes and puts
    run as three concurrent waves (one wave's writes to a key have no order here)."""
    asyncio.run(_async_batched_vector_search(KiokuLangGraphStore(store, user_label=None)))


async def _async_batched_vector_search(lg: KiokuLangGraphStore) -> None:
    colors, things = ["red", "blue", "green", "yellow", "purple"], ["apple", "car", "house"]
    docs = [
        (
            f"doc{i}",
            {"text": f"{colors[i % 5]} {things[i % 3]}", "color": colors[i % 5], "index": i},
        )
        for i in range(30)
    ]
    await asyncio.gather(*[lg.aput(("test",), key, value) for key, value in docs])
    await asyncio.gather(*[lg.adelete(("test",), key) for key, _ in docs])
    await asyncio.gather(*[lg.aput(("test",), key, value) for key, value in docs])
    queries: list[tuple[str, dict[str, Any]]] = [
        ("apple", {"color": "red"}),
        ("house", {"index": {"$gt": 25}}),
        ("car", {"index": {"$lte": 10}, "color": "blue"}),
    ]
    found = await asyncio.gather(*[lg.asearch(("test",), query=q, filter=f) for q, f in queries])
    assert [len(results) for results in found] == [6, 4, 2]
    assert all(r.value["color"] == "red" for r in found[0])
    assert all(r.value["index"] > 25 for r in found[1])
    assert all(r.value["index"] <= 10 and r.value["color"] == "blue" for r in found[2])


# libs/checkpoint-postgres/tests/test_store.py, continued (see test_langgraph_store.py) ------


def test_non_ascii(store: KiokuStore) -> None:
    lg = KiokuLangGraphStore(store, user_label=None)
    texts = ["这是中文", "これは日本語です", "이건 한국어야", "Это русский", "यह रूसी है"]
    for n, words in enumerate(texts, start=1):
        lg.put(("user_123", "memories"), str(n), {"text": words})
    for n, words in enumerate(texts, start=1):
        assert lg.search(("user_123", "memories"), query=words)[0].key == str(n)


def test_namespace_labels_with_trailing_newline(store: KiokuStore) -> None:
    lg = KiokuLangGraphStore(store, user_label=None)
    lg.put(("users", "alice"), "k", {"v": 1})
    lg.put(("users", "alice\n"), "k", {"v": 2})
    assert set(lg.list_namespaces(suffix=("alice",), limit=100)) == {("users", "alice")}
    assert set(lg.list_namespaces(prefix=("users", "alice"), limit=100)) == {("users", "alice")}


# what kioku adds ------------------------------------------------------------------------------


def test_every_change_is_in_the_memorys_history(store: KiokuStore) -> None:
    lg = KiokuLangGraphStore(store, user_label=None, index={"fields": ["text"]})
    lg.put(("docs", "secret-namespace"), "secret-key", {"text": "tea at five", "n": 1})
    lg.put(("docs", "secret-namespace"), "secret-key", {"text": "coffee at six", "n": 2})
    lg.delete(("docs", "secret-namespace"), "secret-key")
    assert _history(store) == [
        ("create", None, "tea at five", "langgraph"),
        ("update", "tea at five", "coffee at six", "langgraph"),
        ("delete", "coffee at six", None, "langgraph"),
    ]
    with store.engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM memories")).scalar_one() == 0
        assert connection.execute(text("SELECT count(*) FROM langgraph_items")).scalar_one() == 0


def test_the_whole_value_is_the_default_text(store: KiokuStore) -> None:
    lg = KiokuLangGraphStore(store, user_label=None)
    lg.put(("docs",), "k", {"b": "second", "a": "first"})
    [(action, _, content, _)] = _history(store)
    assert (action, content) == ("create", '{"a": "first", "b": "second"}')


def test_namespaces_map_onto_scopes(store: KiokuStore) -> None:
    lg = KiokuLangGraphStore(store, user_label=1, server_id="team", index={"fields": ["content"]})
    lg.put(("memories", "u-1"), "a", {"content": "likes tea"})
    lg.put(("memories",), "b", {"content": "shared fact"})
    assert _owners(store) == {
        "a": ("personal", None, "u-1"),
        "b": ("server", "team", None),
    }
    [(memory, _)] = store.search_memories(PersonalScope("u-1", 0), "tea")
    assert memory.content == "likes tea"  # kioku's own search sees the item's text

    def by_tenant(namespace: tuple[str, ...]) -> ServerScope | PersonalScope:
        return ServerScope(f"tenant-{namespace[0]}", 0)

    KiokuLangGraphStore(store, scope=by_tenant).put(("acme", "docs"), "c", {"x": 1})
    assert _owners(store)["c"] == ("server", "tenant-acme", None)


def test_a_bad_scope_rule_is_refused(store: KiokuStore) -> None:
    lg = KiokuLangGraphStore(store, scope=lambda namespace: namespace[0])  # type: ignore[arg-type,return-value]
    with pytest.raises(ConfigurationError, match="ServerScope or kioku.PersonalScope"):
        lg.put(("docs",), "k", {"x": 1})
    with pytest.raises(ConfigurationError, match="user_label"):
        KiokuLangGraphStore(store, user_label=-1)
    assert lg.list_namespaces() == []


def test_erasing_a_user_erases_their_items(store: KiokuStore) -> None:
    lg = KiokuLangGraphStore(store, user_label=1)
    lg.put(("memories", "u-1"), "a", {"content": "likes tea"})
    lg.put(("memories", "u-2"), "a", {"content": "likes coffee"})
    store.erase_user("u-1")
    assert lg.get(("memories", "u-1"), "a") is None
    item = lg.get(("memories", "u-2"), "a")
    assert item is not None and item.value == {"content": "likes coffee"}


def test_nothing_leaks_across_namespaces(store: KiokuStore) -> None:
    lg = KiokuLangGraphStore(store, user_label=1)
    lg.put(("memories", "u-1"), "same", {"content": "u1 secret: likes jasmine tea"})
    lg.put(("memories", "u-12"), "same", {"content": "u12 secret: likes jasmine tea"})
    lg.put(("memories", "u-1", "sub"), "other", {"content": "deeper jasmine tea"})
    mine = lg.search(("memories", "u-1"), query="jasmine tea")
    assert {(r.namespace, r.key) for r in mine} == {
        (("memories", "u-1"), "same"),
        (("memories", "u-1", "sub"), "other"),
    }
    item = lg.get(("memories", "u-12"), "same")
    assert item is not None and item.value["content"].startswith("u12")
    assert lg.list_namespaces(prefix=("memories", "u-1")) == [
        ("memories", "u-1"),
        ("memories", "u-1", "sub"),
    ]


def test_filter_operators(store: KiokuStore) -> None:
    lg = KiokuLangGraphStore(store, user_label=None)
    lg.put(("f",), "one", {"n": 1, "s": "b", "tags": ["x"]})
    lg.put(("f",), "two", {"n": 2, "s": "a"})
    lg.put(("f",), "ten", {"n": 10, "s": "c"})
    lg.put(("f",), "none", {"s": "z"})

    def keys(filter: dict[str, Any]) -> set[str]:
        return {r.key for r in lg.search(("f",), filter=filter)}

    assert keys({"n": {"$gt": 1}}) == {"two", "ten"}  # numbers compare as numbers
    assert keys({"n": {"$lte": 2, "$gte": 2}}) == {"two"}
    assert keys({"n": {"$lt": "9"}}) == set()  # a string is not compared with numbers
    assert keys({"s": {"$lt": "b"}}) == {"two"}
    assert keys({"n": {"$ne": 1}}) == {"two", "ten", "none"}
    assert keys({"tags": ["x"]}) == {"one"}
    assert keys({"n": {"$eq": 10}, "s": "c"}) == {"ten"}
    with pytest.raises(ConfigurationError, match="unsupported filter operator '\\$in'"):
        lg.search(("f",), filter={"n": {"$in": [1]}})


def test_bad_input_is_refused_with_a_clear_error(store: KiokuStore) -> None:
    lg = KiokuLangGraphStore(store, user_label=None)
    with pytest.raises(ConfigurationError, match="values are dicts"):
        lg.put(("docs",), "k", ["not", "a", "dict"])  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="NUL"):
        lg.put(("docs",), "k", {"text": "a\x00b"})
    with pytest.raises(ConfigurationError, match="not JSON"):
        lg.put(("docs",), "k", {"when": object()})
    with pytest.raises(NotImplementedError, match="TTL"):
        lg.put(("docs",), "k", {"x": 1}, ttl=5)
    with pytest.raises(ConfigurationError, match="TTL"):
        lg.batch([PutOp(("docs",), "k", {"x": 1}, ttl=5)])
    with pytest.raises(ConfigurationError, match="limit and offset"):
        lg.batch([SearchOp(("docs",), limit=-1)])
    with pytest.raises(InvalidNamespaceError):
        lg.search(("a.b",))
    with pytest.raises(ConfigurationError, match="index fields"):
        KiokuLangGraphStore(store, user_label=None, index={"fields": []})
    assert not lg.supports_ttl
    assert lg.list_namespaces() == []


def test_concurrent_first_puts_of_a_key_make_one_memory(store: KiokuStore) -> None:
    lg = KiokuLangGraphStore(store, user_label=None)
    start = threading.Barrier(4)

    def put(n: int) -> None:
        start.wait()
        lg.put(("race",), "k", {"n": n})

    threads = [threading.Thread(target=put, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with store.engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM memories")).scalar_one() == 1
    item = lg.get(("race",), "k")
    assert item is not None and item.value["n"] in range(4)
