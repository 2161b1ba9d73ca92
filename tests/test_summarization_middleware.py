"""kioku beside LangChain's ``SummarizationMiddleware``: a summary is nobody's turn.

The summary message that replaces earlier history is a ``HumanMessage``; when it replaces
the turn's own user message mid-turn, the turn goes on (its flags kept), and the summary
is never captured as something the user said.
"""

from __future__ import annotations

from langchain.agents import create_agent
from langchain.agents.middleware import SummarizationMiddleware
from langchain_core.messages import HumanMessage

from kioku import KiokuMemoryMiddleware, KiokuStore, TurnContext, memory_tools
from kioku._stm.store import entry_keys
from kioku.testing import Script, ScriptedChatModel, call_tool, say
from tests.helpers import make_world

SUMMARY = "They greeted each other and started planning a party."


def test_a_summary_replacing_the_turn_start_does_not_open_a_new_turn(store: KiokuStore) -> None:
    world = make_world(store)
    script = Script()
    summariser = ScriptedChatModel(script=Script(fallback=say(SUMMARY)))
    agent = create_agent(
        ScriptedChatModel(script=script),
        tools=memory_tools(store),
        middleware=[
            KiokuMemoryMiddleware(store),
            SummarizationMiddleware(summariser, trigger=("messages", 5), keep=("messages", 2)),
        ],
        context_schema=TurnContext,
        checkpointer=store.checkpointer(),
    )
    config = {"configurable": {"thread_id": "summarised"}}
    context = world.context()
    script.add(say("Hello Alice!"))
    agent.invoke({"messages": [HumanMessage("Hi there", name="Alice")]}, config, context=context)
    script.add(
        call_tool("update_short_term_memory", summary="Planning a party."),
        say("Let's plan it."),
    )
    asked = HumanMessage("Let's plan the party", name="Alice", id="turn-2")
    state = agent.invoke({"messages": [asked]}, config, context=context)

    # Before the turn's second model call the summary replaced everything but the tool
    # call and its result: the summary was written this turn, so the tool is not offered.
    assert any(m.additional_kwargs.get("lc_source") == "summarization" for m in script.prompts[-1])
    assert "update_short_term_memory" in script.offered[-2]
    assert "update_short_term_memory" not in script.offered[-1]
    assert state["kioku_stm_updated"] is True
    assert state["kioku_turn"] == "turn-2"  # the summary did not open a turn of its own
    entry = store.short_term_memory().load(entry_keys(context)[0])
    assert entry is not None
    assert entry.summary == "Planning a party."
    said = [m.text for m in entry.messages]
    assert "Let's plan it." in said
    assert not any("summary of the conversation" in text for text in said)
