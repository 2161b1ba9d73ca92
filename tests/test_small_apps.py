"""What a small app needs to get right: setup order, re-runs, defaults."""

from __future__ import annotations

import pytest

from kioku import (
    DEFAULT_PERSONA,
    ConfigurationError,
    KiokuStore,
    Participant,
    TurnContext,
    create_long_term_memory_tool,
    user_space,
)
from kioku._domain.scopes import ServerScope
from kioku._mcp_server import McpScope
from kioku.testing import Script, ScriptedChatModel, say
from tests.helpers import run_tool


def test_a_persona_before_its_server_says_what_to_call_first(store: KiokuStore) -> None:
    expected = r"upsert_server\('guild-1', \.\.\.\) before"
    with pytest.raises(ConfigurationError, match=expected), store.accounts() as accounts:
        accounts.create_persona("guild-1", "Kioku")
    with pytest.raises(ConfigurationError, match="upsert_server"), store.accounts() as accounts:
        accounts.ensure_persona("guild-1", "Kioku")


def test_a_member_before_the_user_or_server_says_what_to_call_first(store: KiokuStore) -> None:
    with pytest.raises(ConfigurationError, match="upsert_server"), store.accounts() as accounts:
        accounts.add_member("guild-1", "u1")
    with store.accounts() as accounts:
        accounts.upsert_server("guild-1")
    expected = r"upsert_user\('u1', \.\.\.\)"
    with pytest.raises(ConfigurationError, match=expected), store.accounts() as accounts:
        accounts.add_member("guild-1", "u1")


def test_ensure_persona_returns_the_same_persona_every_run(store: KiokuStore) -> None:
    runs = []
    for _ in range(2):
        with store.accounts() as accounts:
            accounts.upsert_server("guild-1", "Tea House", self_teaching_enabled=True)
            runs.append(accounts.ensure_persona("guild-1", "Kioku"))
    assert runs[0] == runs[1]


def test_for_user_fills_in_documented_defaults() -> None:
    context = TurnContext.for_user("u1", thread_id="t1")
    assert context.server_id == user_space("u1")
    assert context.channel_id == "t1"
    assert context.persona == DEFAULT_PERSONA
    assert context.user.user_id == "u1" and context.user.display_name == "u1"
    assert context.all_participants() == (context.user,)
    named = TurnContext.for_user("u1", thread_id="t1", display_name="Alice", provider="x")
    assert named.user.display_name == "Alice" and named.provider == "x"


def test_a_user_space_learns_until_configured(store: KiokuStore) -> None:
    with store.accounts() as accounts:
        assert accounts.server_settings(user_space("u1")).self_teaching_enabled
        assert not accounts.server_settings("some-other-server").self_teaching_enabled
        assert not accounts.server_settings("default").self_teaching_enabled
        accounts.upsert_server(user_space("u1"), self_teaching_enabled=False)
    with store.accounts() as accounts:
        assert not accounts.server_settings(user_space("u1")).self_teaching_enabled


def test_two_users_of_one_app_never_see_each_other(store: KiokuStore) -> None:
    """Their memories and conversations stay in their own spaces."""
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage

    from kioku import KiokuMemoryMiddleware, memory_tools
    from kioku.testing import Script, ScriptedChatModel, call_tool, say

    script = Script(
        [
            call_tool(
                "create_long_term_memory",
                memory_content="The vault code is 4921",
                memory_scope="server_wide",
            ),
            say("Noted."),
            call_tool("update_short_term_memory", summary="Alice shared the vault code."),
            say("ok"),
            say("Hello Bob."),
        ]
    )
    agent = create_agent(
        ScriptedChatModel(script=script),
        tools=memory_tools(store),
        middleware=[KiokuMemoryMiddleware(store)],
        context_schema=TurnContext,
        checkpointer=store.checkpointer(),
    )

    def turn(user: str, thread: str, text: str) -> None:
        agent.invoke(
            {"messages": [HumanMessage(text)]},
            {"configurable": {"thread_id": thread}},
            context=TurnContext.for_user(user, thread_id=thread),
        )

    turn("alice", "alice-chat", "remember the vault code is 4921")
    turn("alice", "alice-chat", "my bank PIN is 4921, keep it between us")
    turn("bob", "bob-chat", "hi")
    seen_by_bob = "\n".join(m.text for m in script.prompts[-1])
    assert "4921" not in seen_by_bob and "alice" not in seen_by_bob.lower()


def test_a_user_space_is_open_only_to_its_users_turns() -> None:
    """A server id naming someone's own space (``user-space:…``) never lets another user's
    turn reach it: such a context is refused, with a message saying what to do."""
    assert TurnContext.for_user("alice", thread_id="t1").server_id == user_space("alice")
    mallory = Participant("mallory", "Mallory")
    with pytest.raises(ConfigurationError, match="give this server another id"):
        TurnContext(
            server_id=user_space("alice"),
            channel_id="c1",
            user=mallory,
            persona=DEFAULT_PERSONA,
            bot_user_id="bot",
        )
    with pytest.raises(ConfigurationError, match="users' own memory spaces"):
        TurnContext.for_user("mallory", thread_id="t1", server_id=user_space("alice"))
    # An MCP server for someone else's space is refused before it serves anything.
    with pytest.raises(ConfigurationError, match="give this server another id"):
        McpScope(server_id=user_space("alice"), user_id="mallory")
    assert McpScope(server_id=user_space("alice"), user_id="alice").user_id == "alice"


def test_a_user_space_s_memories_can_be_consolidated(store: KiokuStore) -> None:
    """``kioku consolidate`` reaches a user's own space as that user would."""
    context = TurnContext.for_user("alice", thread_id="t1")
    tool = create_long_term_memory_tool(store)
    saved = run_tool(
        tool,
        {"memory_content": "the tea club meets on Fridays", "memory_scope": "server_wide"},
        context,
    )
    assert saved.result["status"] == "memory_saved_successfully", saved.result
    scope = ServerScope(user_space("alice"), DEFAULT_PERSONA.lineage_id)
    report = store.consolidate(scope, ScriptedChatModel(script=Script([say("{}")])))
    assert report.total == 1


def test_erasing_a_user_forgets_their_own_space_too(store: KiokuStore) -> None:
    """In a one-user app, a user's server-wide memories live in their own space: "forget
    everything about me" forgets those too, and nobody else's."""
    tool = create_long_term_memory_tool(store)
    for user in ("alice", "bob"):
        context = TurnContext.for_user(user, thread_id=f"{user}-chat")
        for scope, text in (
            ("server_wide", "likes the tea club"),
            ("target_user", "drinks oolong"),
        ):
            args = {"memory_content": f"{user} {text}", "memory_scope": scope}
            if scope == "target_user":
                args["target_user"] = user
            saved = run_tool(tool, args, context)
            assert saved.result["status"] == "memory_saved_successfully", saved.result
    receipt = store.erase_user("alice")
    assert receipt.memories_deleted == 2, receipt
    for user, left in (("alice", 0), ("bob", 1)):
        space = ServerScope(user_space(user), DEFAULT_PERSONA.lineage_id)
        assert len(store.memories(space)) == left
