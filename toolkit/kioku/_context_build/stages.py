"""The memory blocks' stages, run so that the rankings they need go out together.

A memory block whose memories overflow its budget is ranked by the user's message. The
server-wide and the personal block each need a ranking: :meth:`MemoryStages.run` runs
both stages up to their rankings, sends the two rankings' statements in one round trip
(:func:`kioku._db.driver.run_together`), and gives each stage its own. When one ranking
covers a large scope, it is sent first, on a connection of its own, and the server runs it
while the build's own round trip runs the rest (:data:`RANK_AHEAD_FROM`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar, cast

from sqlalchemy.orm import Session

from kioku._context_build import loader
from kioku._context_build.render import Rendered
from kioku._db.driver import SentAhead, Steps, run_steps, run_together

logger = logging.getLogger(__name__)

T = TypeVar("T")


MemoryStage = Generator[loader.RankingNeed, loader.Ranked, Rendered]
"""A memory block's stage: it yields the ranking it needs when its memories overflow the
block, is sent the ranking, and returns the block."""
Guard = Callable[[str, Callable[[], Rendered]], Rendered]
"""Runs a stage; a failure is logged and the stage contributes nothing."""
Again = Callable[[Callable[[], loader.Ranked]], loader.Ranked]
"""Runs a ranking, and once more when it failed in a way that allows it."""
SendAhead = Callable[[loader.RankingNeed], SentAhead[loader.Ranked] | None]
"""Sends a ranking on a connection of its own, its rows read later (``None``: not sent)."""

RANK_AHEAD_FROM = 1_000
"""Memories from which a block's ranking is sent ahead, on a connection of its own.

At 10,000 memories per scope a ranking keeps the server busy 1 to 1.5 ms: sent ahead, it
runs while the build's own round trip runs the other (no thread: a thread's share of the
GIL cost the turn more than it saved). At 100 a ranking takes about 0.2 ms, less than a
second connection costs."""


@dataclass(frozen=True)
class _Started:
    """Stages run up to their rankings: blocks so far, and the stages waiting for one."""

    rendered: dict[str, Rendered]
    waiting: dict[str, tuple[MemoryStage, loader.RankingNeed]]
    ahead: dict[str, SentAhead[loader.Ranked]]

    def here(self) -> dict[str, loader.RankingNeed]:
        """The rankings to run in the build's own session (not sent ahead)."""
        return {name: need for name, (_, need) in self.waiting.items() if name not in self.ahead}

    def settle(self) -> None:
        """End the rankings sent ahead, whatever happened (their connections go back)."""
        for sent in self.ahead.values():
            sent.settle()

    def discard(self) -> None:
        """End the rankings sent ahead unfinished: their results are not wanted."""
        for sent in self.ahead.values():
            sent.discard()


@dataclass(frozen=True)
class MemoryStages:
    """A build's memory stages and how their rankings run (``run`` or ``run_assumed``)."""

    stages: Mapping[str, Callable[[], MemoryStage]]
    ranking: Callable[[loader.RankingNeed], Steps[loader.Ranked]]
    """A ranking's statements, for the build's session."""
    guarded: Guard
    session: Session
    again: Again = lambda attempt: attempt()
    ahead: SendAhead | None = None
    """Sends a large ranking on a connection of its own (``None``: every one runs here)."""

    def run(self) -> dict[str, Rendered]:
        """Each stage's block; the rankings they need sent together, in one round trip.

        Each stage stays guarded on its own: when the rankings sent together fail, every
        stage that needed one ranks alone, so only the failing one contributes nothing. A
        ranking that fails alone runs through ``again``. With ``ahead``, the largest of two
        rankings over :data:`RANK_AHEAD_FROM` memories is sent first, on its own connection.
        """
        started = self._start()
        try:
            work = {name: self.ranking(need) for name, need in started.here().items()}
            return self._finish(started, _ranked_together(work, self.session))
        finally:
            started.settle()

    def run_assumed(
        self, check: Steps[T], holds: Callable[[T], bool]
    ) -> tuple[T, dict[str, Rendered] | None]:
        """``check``'s result, and each stage's block when ``holds`` it: a round trip fewer.

        As :meth:`run`, but the stages run up to their rankings on an assumption (the
        caller's), and their rankings are sent with ``check``'s statement, which
        reads what the assumption is about, in one round trip. When ``holds(result)``, the
        stages are finished with those rankings; when not, none is (``None``): the caller
        runs them again, from what ``check`` read. A failure to send them is raised,
        before any stage is finished.
        """
        started = self._start()
        try:
            work = {name: self.ranking(need) for name, need in started.here().items()}
            sent: list[Steps[Any]] = [check, *work.values()]
            first, *ranked = run_together(self.session, sent)
            result = cast(T, first)
            if not holds(result):
                started.discard()
                return result, None
            return result, self._finish(started, dict(zip(work, ranked, strict=True)))
        finally:
            started.settle()

    def _start(self) -> _Started:
        """Each stage run up to its ranking, and the ranking to send ahead sent."""
        waiting: dict[str, tuple[MemoryStage, loader.RankingNeed]] = {}
        rendered = {
            name: self.guarded(name, partial(_started, name, make, waiting))
            for name, make in self.stages.items()
        }
        needs = {name: need for name, (_, need) in waiting.items()}
        return _Started(rendered, waiting, _sent_ahead(needs, self.ahead))

    def _finish(
        self, started: _Started, together: Mapping[str, loader.Ranked]
    ) -> dict[str, Rendered]:
        """Each waiting stage finished with its ranking: ``together``'s, else its own."""
        rendered, ahead = dict(started.rendered), started.ahead
        # The rankings run here first, while those sent ahead run on their own connections.
        for name in sorted(started.waiting, key=lambda name: name in ahead):
            stage, need = started.waiting[name]
            ranked = partial(self._ranked_alone, together, name, need)
            if name in ahead:
                ranked = partial(_ranked_ahead, ahead[name], ranked)
            rendered[name] = self.guarded(name, partial(_finished, name, stage, ranked))
        return rendered

    def _ranked_alone(
        self, together: Mapping[str, loader.Ranked], name: str, need: loader.RankingNeed
    ) -> loader.Ranked:
        """The stage's ranking: as sent with the others, or alone when that failed."""
        if name in together:
            return together[name]
        return self.again(lambda: run_steps(self.session, self.ranking(need)))


def _sent_ahead(
    needs: Mapping[str, loader.RankingNeed], ahead: SendAhead | None
) -> dict[str, SentAhead[loader.Ranked]]:
    """The ranking to send ahead (the largest, when it is large enough), sent."""
    if ahead is None or len(needs) < 2:
        return {}
    name = max(needs, key=lambda name: _memories(needs[name]))
    if _memories(needs[name]) < RANK_AHEAD_FROM:
        return {}
    try:
        sent = ahead(needs[name])
    except Exception:
        logger.warning("kioku: sending a ranking ahead failed; ranking it with the other")
        return {}
    return {name: sent} if sent is not None else {}


def _memories(need: loader.RankingNeed) -> int:
    return sum(window.total for window in need.held)


def _ranked_ahead(
    sent: SentAhead[loader.Ranked], alone: Callable[[], loader.Ranked]
) -> loader.Ranked:
    """The ranking sent ahead; ranked here when that failed."""
    try:
        return sent.result()
    except Exception:
        logger.warning("kioku: a ranking sent ahead failed; ranking it again")
        return alone()


def _started(
    name: str,
    make: Callable[[], MemoryStage],
    waiting: dict[str, tuple[MemoryStage, loader.RankingNeed]],
) -> Rendered:
    """Run a stage up to its ranking (noted in ``waiting``), or to its block."""
    stage = make()
    try:
        waiting[name] = (stage, next(stage))
    except StopIteration as done:
        return cast(Rendered, done.value)
    return Rendered()  # for now: the block comes once the ranking is in


def _finished(name: str, stage: MemoryStage, ranked: Callable[[], loader.Ranked]) -> Rendered:
    """The stage's block, once it has its ranking."""
    try:
        stage.send(ranked())
    except StopIteration as done:
        return cast(Rendered, done.value)
    raise RuntimeError(f"the {name} stage asked for a second ranking")


def _ranked_together(
    work: Mapping[str, Steps[loader.Ranked]], session: Session
) -> dict[str, loader.Ranked]:
    """The rankings of ``work``, sent together; none when that failed (each then alone)."""
    if len(work) < 2:
        return {}
    try:
        return dict(zip(work, run_together(session, list(work.values())), strict=True))
    except Exception:
        logger.warning("kioku: the rankings sent together failed; ranking one by one")
        session.rollback()
        return {}
