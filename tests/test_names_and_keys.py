"""Names resolve as people type them, on one stored key (issue #11, 3 and 7); server ids
and direct-message keys never collide (issue #11, 2)."""

from __future__ import annotations

import itertools
import json
import re
import unicodedata

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from langchain_core.messages import HumanMessage

from kioku import KiokuStore, Participant
from kioku._accounts import AccountRepository
from kioku._context import dm_server_key, server_key
from kioku._context_build.build import ContextBuilder
from kioku._memory.resolution import NotFound, Resolved, match_directory, match_participants
from kioku._memory.text import normalise_name
from kioku._tools.search import search_long_term_memory
from tests.helpers import World, create_memory, make_world, memory_row, update_memory

NAMES = {
    "Straße": ["Straße", "straße", "STRASSE", "strasse", "@Straße", "  Straße "],
    "Mary  Jane": ["Mary  Jane", "Mary Jane", "mary jane", "MARY\tJANE", "Ｍａｒｙ Ｊａｎｅ"],
    "İpek": ["İpek", "i̇pek", "İPEK"],
    "Ｗｉｄｅ": ["Ｗｉｄｅ", "wide", "WIDE"],
}


@pytest.fixture
def world(store: KiokuStore) -> World:
    return make_world(store)


def test_directory_and_participants_resolve_names_as_typed(world: World) -> None:
    with world.store.accounts() as accounts:
        for index, name in enumerate(NAMES):
            accounts.upsert_user(f"u-{index}", name, is_bridge=True)
            accounts.add_member("srv-a", f"u-{index}")
    for index, (name, typed_forms) in enumerate(NAMES.items()):
        participant = Participant(f"u-{index}", name)
        for typed in typed_forms:
            key = normalise_name(typed)
            found = match_participants(key, [participant], "bot-1")
            assert isinstance(found, Resolved), (name, typed)
            with world.store.sessions() as session:
                members = AccountRepository(session).find_members("srv-a", key)
            assert [m.user_id for m in members] == [f"u-{index}"], (name, typed)
            # Through the tool: a bridged member found by name gets a server-wide memory.
            memory_id = create_memory(
                world,
                {
                    "memory_content": "{User} and {USER} like tea",
                    "memory_scope": "target_user",
                    "target_user": typed,
                },
            )
            saved = memory_row(world.store, memory_id)
            assert saved is not None and saved.scope == "server"
            assert saved.content == f"{name} and {name} like tea"


def test_bridge_user_tokens_in_any_case_name_them(world: World) -> None:
    for content in ("{User} likes tea", "{USER} likes tea", "{{ user }} likes tea"):
        memory_id = create_memory(
            world,
            {"memory_content": content, "memory_scope": "target_user", "target_user": "Matrix Max"},
        )
        built = ContextBuilder(world.store).build(world.context(), [HumanMessage("hi")])
        [server] = [i.text for i in built.items if i.tag == "server_memories"]
        assert re.search(rf"ID:{memory_id} \([^)]*\) Matrix Max likes tea", server)


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1), st.text(min_size=1))
def test_server_keys_never_meet_direct_message_keys(server_id: str, channel_id: str) -> None:
    assert server_key(server_id) != dm_server_key(channel_id)


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1), st.text(min_size=1))
def test_server_keys_are_injective(first: str, second: str) -> None:
    assert (server_key(first) == server_key(second)) == (first == second)


def test_a_server_called_like_a_dm_key_reaches_nothing_of_the_dm(world: World) -> None:
    dm = {"server_id": None, "channel_id": "c42", "participants": (world.alice,)}
    secret = create_memory(
        world, {"memory_content": "DM-SECRET", "memory_scope": "server_wide"}, **dm
    )
    with world.store.accounts() as accounts:
        accounts.upsert_server("dm:c42", "Evil", self_teaching_enabled=True)
    evil = world.context(server_id="dm:c42", server_name="Evil")
    built = ContextBuilder(world.store).build(evil, [HumanMessage("DM-SECRET")])
    assert "DM-SECRET" not in " ".join(i.text for i in built.items)
    payload, _ = search_long_term_memory(world.store, evil, {"query": "DM-SECRET"})
    assert "DM-SECRET" not in json.dumps(payload)
    result = update_memory(world, {"memory_id": secret, "memory_content": ""}, server_id="dm:c42")
    assert result["status"] == "memory_update_failed_not_found"
    assert "DM-SECRET" not in json.dumps(result)
    # The DM still has it, and the evil server's own memories stay its own.
    own = create_memory(
        world, {"memory_content": "EVIL-FACT", "memory_scope": "server_wide"}, server_id="dm:c42"
    )
    built = ContextBuilder(world.store).build(world.context(**dm), [HumanMessage("x")])
    shown = " ".join(i.text for i in built.items)
    assert "DM-SECRET" in shown and "EVIL-FACT" not in shown and own != secret


_TENANTS = itertools.count()
NAME_ALPHABET = st.sampled_from(
    list("aAbBsSßẞiIİıkK") + [" ", "  ", "\t", "Ｓ", "ｓ", "Ａ", "ﬀ", "é", "é", "Å", "Å"]
)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    names=st.lists(
        st.lists(NAME_ALPHABET, min_size=1, max_size=6).map("".join), min_size=1, max_size=4
    ),
    typed=st.lists(NAME_ALPHABET, min_size=1, max_size=6).map("".join),
)
def test_sql_and_python_match_names_alike(store: KiokuStore, names: list[str], typed: str) -> None:
    """One name rule: the directory query (SQL, stored keys) returns exactly the members
    the Python matcher accepts, for generated names and tenants."""
    key = normalise_name(typed)
    assume(key)  # a blank target_user is refused before any name is matched
    server = f"srv-{next(_TENANTS)}"
    with store.accounts() as accounts:
        accounts.upsert_server(server, "S")
        for index, name in enumerate(names):
            if not normalise_name(name):
                continue
            accounts.upsert_user(
                f"{server}-u{index}", name, username=unicodedata.normalize("NFD", name)
            )
            accounts.add_member(server, f"{server}-u{index}", nickname=name.upper())
        accounts.upsert_server("other-" + server, "O")
    with store.sessions() as session:
        members = AccountRepository(session).find_members(server, key)
        elsewhere = AccountRepository(session).find_members("other-" + server, key)
    assert elsewhere == []
    expected = {
        f"{server}-u{index}"
        for index, name in enumerate(names)
        if normalise_name(name)
        and key
        in {
            normalise_name(name),
            normalise_name(name.upper()),
            normalise_name(unicodedata.normalize("NFD", name)),
        }
    }
    assert {m.user_id for m in members} == expected
    python = match_directory(key, members, "bot")
    assert isinstance(python, NotFound) != bool(expected)
    # The conversation's participants are matched by the same rule.
    people = [Participant(f"p{index}", name) for index, name in enumerate(names)]
    in_conversation = match_participants(key, people, "bot")
    by_display = {f"p{i}" for i, name in enumerate(names) if normalise_name(name) == key}
    assert isinstance(in_conversation, NotFound) == (not by_display)


@settings(max_examples=300, deadline=None)
@given(st.text(), st.text(), st.text(), st.text())
def test_short_term_memory_threads_never_collide(o1: str, c1: str, o2: str, c2: str) -> None:
    from kioku._stm.model import StmKey

    first, second = StmKey("server", o1, c1, 10000), StmKey("server", o2, c2, 10000)
    assert (first.thread_id == second.thread_id) == ((o1, c1) == (o2, c2))
