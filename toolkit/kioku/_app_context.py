"""``AppContext``: a flat, all-defaults context for one-user apps and LangGraph Studio."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from kioku._context import DEFAULT_PERSONA, Persona, TurnContext

MAX_APP_THREADS = 1024
"""Threads whose :class:`TurnContext` one :class:`AppContext` keeps (least recently used
dropped first)."""


@dataclass(frozen=True)
class AppContext:
    """A flat context for one-user apps and LangGraph Studio: every field has a default.

    LangGraph Studio shows it as a form, and runs that send no context get the defaults.
    Graphs and agents may use it as their ``context_schema`` instead of
    :class:`TurnContext`; kioku's tools and nodes read the :class:`TurnContext` it stands
    for (:meth:`TurnContext.for_user`).
    """

    user_id: str = "studio-user"
    """The user's id; their personal memories follow them across threads."""
    display_name: str = "You"
    """The name memories use for the user."""
    thread_id: str = ""
    """The conversation (its short-term memory is kept per thread); empty: the thread of
    the run (``configurable.thread_id``)."""
    server_id: str = ""
    """The memory space; empty: the user's own (:func:`user_space`)."""
    persona_name: str = DEFAULT_PERSONA.name
    """The assistant's name (lineage 10000, like :data:`DEFAULT_PERSONA`)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "_turns", OrderedDict())

    def as_turn_context(self) -> TurnContext:
        """The :class:`TurnContext` of this app context in the running thread (made once)."""
        thread = self.thread_id or _run_thread_id()
        turns: OrderedDict[str, TurnContext] = object.__getattribute__(self, "_turns")
        turn = turns.get(thread)
        if turn is not None:
            turns.move_to_end(thread)
        else:
            while len(turns) >= MAX_APP_THREADS:  # the least recently used go first
                turns.popitem(last=False)
            turn = turns.setdefault(
                thread,
                TurnContext.for_user(
                    self.user_id,
                    thread_id=thread,
                    display_name=self.display_name,
                    server_id=self.server_id or None,
                    persona=Persona(0, self.persona_name, DEFAULT_PERSONA.lineage_id),
                ),
            )
        return turn


def _run_thread_id() -> str:
    """The ``thread_id`` of the running graph (``"default"`` outside one, or without one)."""
    from langgraph.config import get_config

    try:
        thread = get_config().get("configurable", {}).get("thread_id")
    except RuntimeError:  # not inside a runnable
        thread = None
    return str(thread) if thread else "default"
