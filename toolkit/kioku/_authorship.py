"""Whose each message is, stamped when the turn runs (pure message logic).

Short-term memory must never hold a ``FULL``-privacy person's messages nor the bot's
replies to them, whichever turn later captures the thread. So every message is stamped
when it enters the conversation: a user's message with its author, a reply with the
person it answers, and both with whether that person was invisible (``FULL``) then.
Capture and recall read the stamps (:func:`kioku._reach.may_remember_message`).
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from kioku._context import PrivacyLevel, TurnContext
from kioku._memory.resolution import Resolved, match_participants
from kioku._memory.text import normalise_name
from kioku._reach import invisible_people

OWNER = "kioku_user_id"
"""``additional_kwargs`` key: the person the message belongs to (author, or the person a
reply answers). An application may set it on messages it adds for other speakers."""
PRIVATE = "kioku_private"
"""``additional_kwargs`` key: written in, or answering, a turn of a FULL-privacy person."""


SUMMARY_SOURCE = "summarization"
"""``additional_kwargs["lc_source"]`` of the message LangChain's ``SummarizationMiddleware``
puts in place of the history it summarised: a user message nobody wrote."""


def is_summary(message: BaseMessage) -> bool:
    """Whether ``message`` is a summary of earlier history (``SummarizationMiddleware``)."""
    return message.additional_kwargs.get("lc_source") == SUMMARY_SOURCE


def is_user_message(message: BaseMessage) -> bool:
    """Whether ``message`` is something a user said: a human message, not a summary."""
    return isinstance(message, HumanMessage) and not is_summary(message)


def _stamped(message: BaseMessage, owner_id: str | None, private: bool) -> BaseMessage:
    kwargs = dict(message.additional_kwargs)
    kwargs[OWNER] = owner_id
    kwargs[PRIVATE] = private
    return message.model_copy(update={"additional_kwargs": kwargs})


def _is_private(context: TurnContext) -> bool:
    return context.user.privacy == PrivacyLevel.FULL


def speaker_of(message: BaseMessage, context: TurnContext) -> tuple[str | None, bool]:
    """``(owner id, private)`` of a user message that came with ``context``'s turn.

    An owner the application stamped is kept; otherwise the message's ``name`` says who
    wrote it (matched like any name against the participants), and a message without a
    name is the triggering user's. A name that matches nobody, or several people, makes
    the message private: kioku cannot tell whose it is, so it does not remember it.
    """
    people = context.all_participants()
    owner = message.additional_kwargs.get(OWNER)
    if owner is None and message.name and message.name != context.user.display_name:
        found = match_participants(normalise_name(message.name), people, context.bot_user_id)
        if not isinstance(found, Resolved):
            return None, True
        owner = found.person.user_id
    owner = str(owner) if owner is not None else context.user.user_id
    private = owner in invisible_people(context)
    return owner, private or (owner == context.user.user_id and _is_private(context))


def stamp_turn_input(
    messages: Sequence[BaseMessage], context: TurnContext
) -> list[BaseMessage] | None:
    """``messages`` with every unstamped message stamped (``None``: nothing to do).

    They came with ``context``'s turn (new input, or history an application seeded): a
    user message belongs to its speaker (:func:`speaker_of`); an assistant message answers
    the user message before it.
    """
    stamped = list(messages)
    changed = False
    answering: tuple[str | None, bool] = (context.user.user_id, _is_private(context))
    for index, message in enumerate(stamped):
        if is_summary(message):
            continue
        if isinstance(message, HumanMessage | AIMessage) and PRIVATE in message.additional_kwargs:
            if isinstance(message, HumanMessage):
                answering = owner_of(message)
            continue
        if isinstance(message, HumanMessage):
            answering = speaker_of(message, context)
            stamped[index] = _stamped(message, *answering)
            changed = True
        elif isinstance(message, AIMessage):
            stamped[index] = _stamped(message, *answering)
            changed = True
    return stamped if changed else None


def stamp_reply(message: BaseMessage, context: TurnContext) -> BaseMessage:
    """The model's ``message``, stamped as answering the turn's user."""
    return _stamped(message, context.user.user_id, _is_private(context))


def owner_of(message: BaseMessage) -> tuple[str | None, bool]:
    """``(owner id, marked private)`` from a message's stamps."""
    owner = message.additional_kwargs.get(OWNER)
    return (str(owner) if owner is not None else None), bool(message.additional_kwargs.get(PRIVATE))


def person_message_ids(
    messages: Sequence[BaseMessage], user_id: str, name_keys: frozenset[str]
) -> list[str]:
    """Ids of the person's messages, the replies to them, and those replies' tool results.

    Unstamped user messages (older than stamping, or added by an application) count as
    theirs when their ``name`` is one of the person's normalised names.
    """
    doomed: list[str] = []
    calls: set[str] = set()
    for message in messages:
        owner, _ = owner_of(message)
        if owner is not None:
            theirs = owner == user_id
        else:
            theirs = (
                isinstance(message, HumanMessage)
                and message.name is not None
                and normalise_name(message.name) in name_keys
            )
        if isinstance(message, ToolMessage) and message.tool_call_id in calls:
            theirs = True
        if theirs and message.id is not None:
            doomed.append(message.id)
            if isinstance(message, AIMessage):
                calls.update(call["id"] or "" for call in message.tool_calls)
    return doomed
