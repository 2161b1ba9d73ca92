"""``kioku.KiokuLangGraphStore``: LangGraph's ``BaseStore`` contract on kioku's memories.

The cases of LangGraph's own store tests (``libs/checkpoint-postgres/tests/test_store.py``
and ``libs/checkpoint/tests/test_store.py``), ported to kioku's store on a real
PostgreSQL; docs/langgraph-store.md lists those left out and why.
"""

from __future__ import annotations

from typing import cast

import pytest
from langgraph.store.base import (
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchOp,
)

from kioku import ConfigurationError, KiokuLangGraphStore, KiokuStore


@pytest.fixture
def lg(store: KiokuStore) -> KiokuLangGraphStore:
    return KiokuLangGraphStore(store, user_label=None)


def _found(result: Result) -> list[Item]:
    """A search's result, checked to be items."""
    assert isinstance(result, list) and all(isinstance(item, Item) for item in result)
    return cast(list[Item], result)


def _listed(result: Result) -> list[tuple[str, ...]]:
    """A namespace listing's result, checked to be namespaces."""
    assert isinstance(result, list) and all(isinstance(ns, tuple) for ns in result)
    return cast(list[tuple[str, ...]], result)


def _namespaces(lg: KiokuLangGraphStore, prefix: tuple[str, ...]) -> set[tuple[str, ...]]:
    return {item.namespace for item in lg.search(prefix, limit=100)}


# libs/checkpoint-postgres/tests/test_store.py ---------------------------------------------


def test_batch_order(lg: KiokuLangGraphStore) -> None:
    lg.put(("test", "foo"), "key1", {"data": "value1"})
    lg.put(("test", "bar"), "key2", {"data": "value2"})
    ops: list[Op] = [
        GetOp(namespace=("test", "foo"), key="key1"),
        PutOp(namespace=("test", "bar"), key="key2", value={"data": "value2"}),
        SearchOp(namespace_prefix=("test",), filter={"data": "value1"}, limit=10, offset=0),
        ListNamespacesOp(match_conditions=None, max_depth=None, limit=10, offset=0),
        GetOp(namespace=("test",), key="key3"),
    ]
    results = lg.batch(ops)
    assert len(results) == 5
    assert isinstance(results[0], Item) and results[0].value == {"data": "value1"}
    assert results[0].key == "key1"
    assert results[1] is None
    assert isinstance(results[2], list) and len(results[2]) == 1
    assert isinstance(results[3], list) and len(results[3]) > 0
    assert results[4] is None

    reordered = lg.batch(
        [
            SearchOp(namespace_prefix=("test",), filter=None, limit=5, offset=0),
            GetOp(namespace=("test", "bar"), key="key2"),
            ListNamespacesOp(match_conditions=None, max_depth=None, limit=5, offset=0),
            PutOp(namespace=("test",), key="key3", value={"data": "value3"}),
            GetOp(namespace=("test", "foo"), key="key1"),
        ]
    )
    assert isinstance(reordered[0], list) and len(reordered[0]) >= 2
    assert isinstance(reordered[1], Item) and reordered[1].value == {"data": "value2"}
    assert isinstance(reordered[2], list) and len(reordered[2]) > 0
    assert reordered[3] is None
    assert isinstance(reordered[4], Item) and reordered[4].value == {"data": "value1"}


def test_batch_get_ops(lg: KiokuLangGraphStore) -> None:
    lg.put(("test",), "key1", {"data": "value1"})
    lg.put(("test",), "key2", {"data": "value2"})
    results = lg.batch(
        [
            GetOp(namespace=("test",), key="key1"),
            GetOp(namespace=("test",), key="key2"),
            GetOp(namespace=("test",), key="key3"),
        ]
    )
    assert [r.key if isinstance(r, Item) else r for r in results] == ["key1", "key2", None]


def test_batch_put_ops(lg: KiokuLangGraphStore) -> None:
    results = lg.batch(
        [
            PutOp(namespace=("test",), key="key1", value={"data": "value1"}),
            PutOp(namespace=("test",), key="key2", value={"data": "value2"}),
            PutOp(namespace=("test",), key="key3", value=None),
        ]
    )
    assert results == [None, None, None]
    item1, item2 = lg.get(("test",), "key1"), lg.get(("test",), "key2")
    assert item1 is not None and item1.value == {"data": "value1"}
    assert item2 is not None and item2.value == {"data": "value2"}
    assert lg.get(("test",), "key3") is None


def test_batch_search_ops(lg: KiokuLangGraphStore) -> None:
    for namespace, key, value in [
        (("test", "foo"), "key1", {"data": "value1", "tag": "a"}),
        (("test", "bar"), "key2", {"data": "value2", "tag": "a"}),
        (("test", "baz"), "key3", {"data": "value3", "tag": "b"}),
    ]:
        lg.put(namespace, key, value)
    tagged, first_two, foo = map(
        _found,
        lg.batch(
            [
                SearchOp(namespace_prefix=("test",), filter={"tag": "a"}, limit=10, offset=0),
                SearchOp(namespace_prefix=("test",), filter=None, limit=2, offset=0),
                SearchOp(namespace_prefix=("test", "foo"), filter=None, limit=10, offset=0),
            ]
        ),
    )
    assert len(tagged) == 2 and all(item.value["tag"] == "a" for item in tagged)
    assert len(first_two) == 2
    assert [item.namespace for item in foo] == [("test", "foo")]


def test_batch_list_namespaces_ops(lg: KiokuLangGraphStore) -> None:
    data = [
        (("test", "documents", "public"), "doc1", {"content": "public doc"}),
        (("test", "documents", "private"), "doc2", {"content": "private doc"}),
        (("test", "images", "public"), "img1", {"content": "public image"}),
        (("prod", "documents", "public"), "doc3", {"content": "prod doc"}),
    ]
    for namespace, key, value in data:
        lg.put(namespace, key, value)
    every, shallow, public = map(
        _listed,
        lg.batch(
            [
                ListNamespacesOp(match_conditions=None, max_depth=None, limit=10, offset=0),
                ListNamespacesOp(match_conditions=None, max_depth=2, limit=10, offset=0),
                ListNamespacesOp(
                    match_conditions=(MatchCondition("suffix", ("public",)),),
                    max_depth=None,
                    limit=10,
                    offset=0,
                ),
            ]
        ),
    )
    assert len(every) == len(data)
    assert all(len(ns) <= 2 for ns in shallow)
    assert public and all(ns[-1] == "public" for ns in public)


def test_basic_store_ops(lg: KiokuLangGraphStore) -> None:
    namespace = ("test", "documents")
    lg.put(namespace, "doc1", {"title": "Test Document", "content": "Hello, World!"})
    item = lg.get(namespace, "doc1")
    assert item is not None and item.namespace == namespace and item.key == "doc1"
    assert item.value == {"title": "Test Document", "content": "Hello, World!"}

    lg.put(namespace, "doc1", {"title": "Updated Document", "content": "Hello, Updated!"})
    updated = lg.get(namespace, "doc1")
    assert updated is not None
    assert updated.value == {"title": "Updated Document", "content": "Hello, Updated!"}
    assert updated.updated_at > item.updated_at
    assert updated.created_at == item.created_at

    assert lg.get(("test", "other_documents"), "doc1") is None
    lg.delete(namespace, "doc1")
    assert lg.get(namespace, "doc1") is None


def test_list_namespaces(lg: KiokuLangGraphStore) -> None:
    namespaces = [
        ("test", "documents", "public"),
        ("test", "documents", "private"),
        ("test", "images", "public"),
        ("test", "images", "private"),
        ("prod", "documents", "public"),
        ("prod", "documents", "private"),
    ]
    for namespace in namespaces:
        lg.put(namespace, "dummy", {"content": "dummy"})
    assert len(lg.list_namespaces()) == len(namespaces)
    under_test = lg.list_namespaces(prefix=("test",))
    assert len(under_test) == 4 and all(ns[0] == "test" for ns in under_test)
    public = lg.list_namespaces(suffix=("public",))
    assert len(public) == 3 and all(ns[-1] == "public" for ns in public)
    assert all(len(ns) <= 2 for ns in lg.list_namespaces(max_depth=2))
    assert len(lg.list_namespaces(limit=3)) == 3
    for namespace in namespaces:
        lg.delete(namespace, "dummy")
    assert lg.list_namespaces() == []


def test_search_namespace_segment_boundary(lg: KiokuLangGraphStore) -> None:
    for namespace in [
        ("foo",),
        ("foo", "child"),
        ("foo", "child", "deep"),
        ("foobar",),
        ("foobar", "baz"),
        ("foo2",),
    ]:
        lg.put(namespace, "k", {"v": 1})
    assert _namespaces(lg, ("foo",)) == {("foo",), ("foo", "child"), ("foo", "child", "deep")}
    assert _namespaces(lg, ("foobar",)) == {("foobar",), ("foobar", "baz")}
    assert _namespaces(lg, ("foo", "child")) == {("foo", "child"), ("foo", "child", "deep")}
    assert _namespaces(lg, ("foo2",)) == {("foo2",)}
    assert _namespaces(lg, ("fo",)) == set()


def test_search_empty_prefix_is_unconstrained(lg: KiokuLangGraphStore) -> None:
    for namespace in [("a",), ("b", "c"), ("d", "e", "f")]:
        lg.put(namespace, "k", {"v": 1})
    assert _namespaces(lg, ()) == {("a",), ("b", "c"), ("d", "e", "f")}


def test_search_namespace_like_metacharacters(lg: KiokuLangGraphStore) -> None:
    for namespace in [("user_1",), ("user_1", "child"), ("userX1",), ("a%b",), ("axxb",)]:
        lg.put(namespace, "k", {"v": 1})
    assert _namespaces(lg, ("user_1",)) == {("user_1",), ("user_1", "child")}
    assert _namespaces(lg, ("a%b",)) == {("a%b",)}


def test_list_namespaces_segment_boundary(lg: KiokuLangGraphStore) -> None:
    for namespace in [
        ("foo",),
        ("foo", "child"),
        ("foobar",),
        ("foobar", "baz"),
        ("uid", "users", "alice"),
        ("uid", "users", "malice"),
        ("uid", "a", "b", "alice"),
    ]:
        lg.put(namespace, "k", {"v": 1})
    assert set(lg.list_namespaces(prefix=("foo",), limit=100)) == {("foo",), ("foo", "child")}
    assert set(lg.list_namespaces(suffix=("alice",), limit=100)) == {
        ("uid", "users", "alice"),
        ("uid", "a", "b", "alice"),
    }
    assert set(lg.list_namespaces(prefix=("uid", "*", "alice"), limit=100)) == {
        ("uid", "users", "alice")
    }
    assert set(lg.list_namespaces(prefix=("uid",), limit=100)) == {
        ("uid", "users", "alice"),
        ("uid", "users", "malice"),
        ("uid", "a", "b", "alice"),
    }


def test_search(lg: KiokuLangGraphStore) -> None:
    data = [
        (("test", "docs"), "doc1", {"title": "First Doc", "author": "Alice", "tags": ["a"]}),
        (("test", "docs"), "doc2", {"title": "Second Doc", "author": "Bob", "tags": ["b"]}),
        (("test", "images"), "img1", {"title": "Image 1", "author": "Alice", "tags": ["c"]}),
    ]
    for namespace, key, value in data:
        lg.put(namespace, key, value)
    assert len(lg.search(("test",))) == 3
    docs = lg.search(("test", "docs"))
    assert len(docs) == 2 and all(item.namespace == ("test", "docs") for item in docs)
    alice = lg.search(("test",), filter={"author": "Alice"})
    assert len(alice) == 2 and all(item.value["author"] == "Alice" for item in alice)
    assert len(lg.search(("test",), limit=2)) == 2
    assert len(lg.search(("test",), offset=2)) == 1
    assert [item.key for item in lg.search(("test",))] == ["img1", "doc2", "doc1"]
    assert all(item.score is None for item in lg.search(("test",)))


def test_vector_store_initialization(store: KiokuStore) -> None:
    """Adapted: kioku embeds with its own embedder; ``index`` takes only ``fields``."""
    index = {"fields": ["text"], "dims": store.embedder.dimension}
    lg = KiokuLangGraphStore(store, user_label=None, index=index)
    assert lg.index.fields == ("text",)
    with pytest.raises(ConfigurationError, match="embed"):
        KiokuLangGraphStore(store, user_label=None, index={"embed": store.embedder.embeddings})
    with pytest.raises(ConfigurationError, match="dims"):
        KiokuLangGraphStore(store, user_label=None, index={"dims": 3})


def test_vector_insert_with_auto_embedding(lg: KiokuLangGraphStore) -> None:
    for key, value in [
        ("doc1", {"text": "short text"}),
        ("doc2", {"text": "longer text document"}),
        ("doc3", {"text": "longest text document here"}),
        ("doc4", {"description": "text in description field"}),
        ("doc5", {"content": "text in content field"}),
        ("doc6", {"body": "text in body field"}),
    ]:
        lg.put(("test",), key, value)
    keys = [r.key for r in lg.search(("test",), query="long text")]
    assert "doc2" in keys and "doc3" in keys


def test_vector_update_with_embedding(lg: KiokuLangGraphStore) -> None:
    lg.put(("test",), "doc1", {"text": "zany zebra Xerxes"})
    lg.put(("test",), "doc2", {"text": "something about dogs"})
    lg.put(("test",), "doc3", {"text": "text about birds"})
    initial = lg.search(("test",), query="Zany Xerxes")
    assert initial[0].key == "doc1" and initial[0].score is not None
    initial_score = initial[0].score

    lg.put(("test",), "doc1", {"text": "new text about dogs"})
    after = lg.search(("test",), query="Zany Xerxes")
    after_score = next((r.score for r in after if r.key == "doc1"), 0.0) or 0.0
    assert after_score < initial_score
    for r in lg.search(("test",), query="new text about dogs"):
        if r.key == "doc1":
            assert r.score is not None and r.score > after_score

    lg.put(("test",), "doc4", {"text": "new text about dogs"}, index=False)
    found = lg.search(("test",), query="new text about dogs", limit=3)
    assert not any(r.key == "doc4" for r in found)


@pytest.mark.parametrize("refresh_ttl", [True, False])
def test_vector_search_with_filters(lg: KiokuLangGraphStore, refresh_ttl: bool) -> None:
    for key, value in [
        ("doc1", {"text": "red apple", "color": "red", "score": 4.5}),
        ("doc2", {"text": "red car", "color": "red", "score": 3.0}),
        ("doc3", {"text": "green apple", "color": "green", "score": 4.0}),
        ("doc4", {"text": "blue car", "color": "blue", "score": 3.5}),
    ]:
        lg.put(("test",), key, value)
    found = lg.search(("test",), query="apple", filter={"color": "red"}, refresh_ttl=refresh_ttl)
    assert [r.key for r in found][:1] == ["doc1"] and len(found) == 2
    found = lg.search(("test",), query="car", filter={"color": "red"}, refresh_ttl=refresh_ttl)
    assert [r.key for r in found][:1] == ["doc2"] and len(found) == 2
    found = lg.search(
        ("test",), query="bbbbluuu", filter={"score": {"$gt": 3.2}}, refresh_ttl=refresh_ttl
    )
    assert len(found) == 3 and found[0].key == "doc4"
    found = lg.search(("test",), query="apple", filter={"score": {"$gte": 4.0}, "color": "green"})
    assert [r.key for r in found] == ["doc3"]


def test_vector_search_pagination(lg: KiokuLangGraphStore) -> None:
    for i in range(5):
        lg.put(("test",), f"doc{i}", {"text": f"test document number {i}"})
    page1 = lg.search(("test",), query="test", limit=2)
    page2 = lg.search(("test",), query="test", limit=2, offset=2)
    assert len(page1) == 2 and len(page2) == 2
    assert {r.key for r in page1}.isdisjoint(r.key for r in page2)
    assert len(lg.search(("test",), query="test", limit=10)) == 5


def test_vector_search_edge_cases(lg: KiokuLangGraphStore) -> None:
    lg.put(("test",), "doc1", {"text": "test document"})
    assert len(lg.search(("test",), query="")) == 1
    assert len(lg.search(("test",), query=None)) == 1
    assert len(lg.search(("test",), query="test " * 100)) == 1
    assert len(lg.search(("test",), query="test!@#$%^&*()")) == 1


def test_embed_with_path(store: KiokuStore) -> None:
    """Adapted: one vector per item (its fields' text), so no per-field score equalities."""
    lg = KiokuLangGraphStore(store, user_label=None, index={"fields": ["key0", "key1", "key3"]})
    lg.put(("test",), "doc1", {"key1": "xxx", "key2": "yyy", "key3": "zzz"})
    lg.put(("test",), "doc2", {"key0": "uuu", "key1": "vvv", "key2": "www", "key3": "xxx"})
    assert {r.key for r in lg.search(("test",), query="xxx")} == {"doc1", "doc2"}
    for query, best in [("uuu", "doc2"), ("zzz", "doc1")]:
        found = lg.search(("test",), query=query)
        assert len(found) == 2 and found[0].key == best
        assert (found[0].score or 0) > (found[1].score or 0)
    best_xxx = max(r.score or 0 for r in lg.search(("test",), query="xxx"))
    unindexed = lg.search(("test",), query="www")
    assert len(unindexed) == 2 and all((r.score or 0) <= best_xxx for r in unindexed)


def test_embed_with_path_operation_config(store: KiokuStore) -> None:
    lg = KiokuLangGraphStore(store, user_label=None, index={"fields": ["key17"]})
    doc3 = {"key0": "aaa", "key1": "bbb", "key2": "ccc", "key3": "ddd"}
    doc4 = {"key0": "eee", "key1": "bbb", "key2": "fff", "key3": "ggg"}
    lg.put(("test",), "doc3", doc3, index=["key0", "key1"])
    lg.put(("test",), "doc4", doc4, index=["key1", "key3"])
    for query, best in [("aaa", "doc3"), ("ggg", "doc4")]:
        found = lg.search(("test",), query=query)
        assert len(found) == 2 and found[0].key == best
        assert (found[0].score or 0) > (found[1].score or 0)
    assert {r.key for r in lg.search(("test",), query="bbb")} == {"doc3", "doc4"}

    lg.put(("test",), "doc5", {"key0": "hhh", "key1": "iii"}, index=False)
    listed = lg.search(("test",))
    assert len(listed) == 3 and all(r.score is None for r in listed)
    assert any(r.key == "doc5" for r in listed)
    assert all(r.key != "doc5" for r in lg.search(("test",), query="hhh"))
