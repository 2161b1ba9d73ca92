"""Turn latency against conversation length (issue #13): flat once the thread is trimmed.

For each length, a conversation of that many messages is held in its own graph thread,
then full scripted turns (``graph.invoke``: intent gate, context build, model, capture,
trimming, ``PostgresSaver`` checkpoints) are timed on it. Every timed turn starts from
the same saved state (LangGraph replays from that checkpoint), so a thread does not
grow while it is measured. Lengths alternate in rounds (``bench.rounds.Rounds``), so a
noisy neighbour slows them alike.

How a conversation is prepared:
- ``turns`` (default): its turns are run through the graph (length/2 of them), so the
  thread is what a long conversation leaves behind (trimmed after every turn);
- ``state``: the messages are written into the thread at once, then one turn is run
  (it stamps them, and trims them unless trimming is off) — quick, for ``--baseline``.

After preparing, each thread's older checkpoints are pruned (``keep_latest``), as the
README asks of applications; ``--no-prune`` keeps them, and then ``PostgresSaver`` reads
the thread that ran hundreds of turns more slowly (about 1.3–1.5x here), whatever its
length now.

``--baseline`` turns trimming off (the thread keeps every message), which is how the
graph behaved before: the 1,000-message thread is then much slower than the 10-message one.

Run: .venv/bin/python -m bench.curves [--lengths 10 1000] [--turns 100] [--baseline]
[--no-prune]
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable, Sequence
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph

from bench.common import bench_database, open_store, percentile, seed_accounts
from bench.rounds import Rounds
from kioku import KiokuStore, Participant, Persona, TurnContext
from kioku._embeddings import EmbedderSpec, HashingEmbeddings
from kioku.graphs import TurnGraphState, build_graph
from kioku.testing import Script, ScriptedChatModel, echo

SERVER = "curves-server"
USERS = tuple(Participant(f"curves-user-{i}", f"Talker {i}") for i in range(4))
UNTRIMMED = 10**9


def _context(persona: Any, channel: str, turn: int) -> TurnContext:
    speaker = USERS[turn % len(USERS)]
    return TurnContext(
        server_id=SERVER,
        server_name="Curves",
        channel_id=channel,
        channel_name=channel,
        user=speaker,
        participants=USERS,
        persona=persona,
        bot_user_id="curves-bot",
    )


def _said(turn: int) -> HumanMessage:
    speaker = USERS[turn % len(USERS)]
    return HumanMessage(
        f"turn {turn}: shall we keep talking about tea, hiking and jazz?",
        name=speaker.display_name,
    )


def _history(length: int) -> list[BaseMessage]:
    messages: list[BaseMessage] = []
    for turn in range(length // 2):
        said = _said(turn)
        messages += [said, AIMessage(f"(scripted model) You said: {said.text}")]
    return messages


def measure_conversation_length(
    lengths: Sequence[int] = (10, 1000),
    turns: int = 100,
    *,
    max_thread_messages: int | None = None,
    fill: Literal["turns", "state"] = "turns",
    prune: bool = True,
    show: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Turn p50/p95 on conversations of ``lengths`` messages (``turns`` timed turns each).

    ``max_thread_messages``: the graph's trimming limit (``None``: the setting's default,
    ``UNTRIMMED``: off).
    """
    hashing = HashingEmbeddings(384)
    result: dict[str, Any] = {"lengths": {}, "turns": turns, "fill": fill, "pruned": prune}
    with bench_database("kioku_bench_curves") as url:
        store = open_store(url, EmbedderSpec(hashing, "hashing-384", 384))
        persona = seed_accounts(store, SERVER, "Curves", USERS, members=True)
        graph = build_graph(
            ScriptedChatModel(script=Script(fallback=echo)),
            store,
            checkpointer=store.checkpointer(),
            max_thread_messages=max_thread_messages,
        )
        result["max_thread_messages"] = (
            store.settings.thread_max_messages
            if max_thread_messages is None
            else max_thread_messages
        )
        bases: dict[int, RunnableConfig] = {}
        for length in lengths:
            bases[length], held = _prepare(graph, store, persona, length, fill=fill, prune=prune)
            result["lengths"][str(length)] = {"thread_messages": held}
            if show:
                show(f"length {length}: prepared, thread holds {held} messages")
        contenders = {
            str(length): _timed_turn(graph, persona, length, bases[length]) for length in lengths
        }
        rounds = Rounds.of_turns(contenders, turns)
        store.close()
    for length in lengths:
        samples = rounds.samples[str(length)]
        result["lengths"][str(length)].update(
            p50_ms=round(statistics.median(samples), 2),
            p95_ms=round(percentile(samples, 0.95), 2),
            samples=len(samples),
        )
    if len(lengths) >= 2:
        short, long = str(min(lengths)), str(max(lengths))
        figures = result["lengths"]
        result["ratio_p50"] = round(figures[long]["p50_ms"] / figures[short]["p50_ms"], 3)
        result["ratio_p95"] = round(figures[long]["p95_ms"] / figures[short]["p95_ms"], 3)
    return result


TurnGraph = CompiledStateGraph[TurnGraphState, Any, TurnGraphState, TurnGraphState]
"""What :func:`kioku.graphs.build_graph` compiles."""


def _prepare(
    graph: TurnGraph,
    store: KiokuStore,
    persona: Persona,
    length: int,
    *,
    fill: Literal["turns", "state"],
    prune: bool,
) -> tuple[RunnableConfig, int]:
    """A conversation of ``length`` messages: its latest checkpoint, the messages it holds.

    ``fill="turns"`` plays every turn through the graph; ``"state"`` writes the first half
    into the state at once.
    """
    thread: RunnableConfig = {"configurable": {"thread_id": f"conversation-{length}"}}
    first = 0
    if fill == "state":
        graph.update_state(thread, {"messages": _history(length)}, as_node="capture")
        first = length // 2
    for turn in range(first, max(first + 1, length // 2)):
        context = _context(persona, f"channel-{length}", turn)
        graph.invoke({"messages": [_said(turn)]}, thread, context=context)
    if prune:
        # What the README asks of an application: older checkpoints pruned now and then
        # (they hold the messages trimming removed).
        store.checkpointer().prune([f"conversation-{length}"], strategy="keep_latest")
    state = graph.get_state(thread)
    return state.config, len(state.values["messages"])


def _timed_turn(
    graph: TurnGraph, persona: Persona, length: int, base: RunnableConfig
) -> Callable[[], object]:
    """A turn on the conversation of ``length``, from its prepared checkpoint every time."""
    counter = iter(range(10**9))

    def run() -> object:
        turn = length // 2 + next(counter)
        # From the prepared checkpoint every time: the thread does not grow.
        return graph.invoke(
            {"messages": [_said(turn)]}, base, context=_context(persona, f"channel-{length}", turn)
        )

    return run


def main(argv: list[str] | None = None) -> None:
    """Measure and print the curve."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lengths", type=int, nargs="+", default=[10, 1000])
    parser.add_argument("--turns", type=int, default=100, help="timed turns per length")
    parser.add_argument("--baseline", action="store_true", help="trimming off (as before)")
    parser.add_argument("--fill", choices=["turns", "state"], default=None)
    parser.add_argument(
        "--no-prune", action="store_true", help="keep every checkpoint of the prepared threads"
    )
    args = parser.parse_args(argv)
    fill: Literal["turns", "state"] = args.fill or ("state" if args.baseline else "turns")
    result = measure_conversation_length(
        args.lengths,
        args.turns,
        max_thread_messages=UNTRIMMED if args.baseline else None,
        fill=fill,
        prune=not args.no_prune,
        show=print,
    )
    limit = result["max_thread_messages"]
    print(f"thread limit: {'off' if limit == UNTRIMMED else limit} messages; fill: {fill}")
    for length, figures in result["lengths"].items():
        print(
            f"  {int(length):>6,} messages (thread {figures['thread_messages']:>5}): "
            f"p50 {figures['p50_ms']:8.2f} ms  p95 {figures['p95_ms']:8.2f} ms"
            f"  ({figures['samples']} turns)"
        )
    if "ratio_p50" in result:
        lo, hi = min(args.lengths), max(args.lengths)
        print(
            f"ratio {hi:,}/{lo:,}: p50 {result['ratio_p50']:.3f}, p95 {result['ratio_p95']:.3f}"
            " (target <= 1.2)"
        )


if __name__ == "__main__":
    main()
