"""The memory blocks' stages, run so that the rankings they need go out together.

A memory block whose memories overflow its budget is ranked by the user's message. The
server-wide and the personal block each need a ranking: :meth:`MemoryStages.run` runs
both stages up to their rankings, sends the two rankings' statements in one round trip
(:func:`kioku._db.driver.run_together`), and gives each stage its own. When one ranking
covers a large scope, it runs on a connection of its own instead, at the same time as the
other (:data:`RANK_BESIDE_FROM`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Generator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar, cast

from sqlalchemy.orm import Session

from kioku._context_build import loader
from kioku._context_build.render import Rendered
from kioku._db.driver import Steps, run_steps, run_together

logger = logging.getLogger(__name__)

T = TypeVar("T")


MemoryStage = Generator[loader.RankingNeed, loader.Ranked, Rendered]
"""A memory block's stage: it yields the ranking it needs when its memories overflow the
block, is sent the ranking, and returns the block."""
Guard = Callable[[str, Callable[[], Rendered]], Rendered]
"""Runs a stage; a failure is logged and the stage contributes nothing."""
RankBeside = Callable[[loader.RankingNeed], Future[loader.Ranked]]
"""Starts a ranking on a connection of its own; its future holds the ranking."""
Again = Callable[[Callable[[], loader.Ranked]], loader.Ranked]
"""Runs a ranking, and once more when it failed in a way that allows it."""

RANK_BESIDE_FROM = 1_000
"""Memories from which a block's ranking runs beside the other block's, not after it.

At 10,000 memories per scope each ranking keeps the server busy about 2.5 ms; side by
side, on two connections, a turn waits for one. At 100 each takes about 0.2 ms, less than
handing one to another thread costs."""


class RankingThreads:
    """Runs rankings on connections of their own, in a few threads (made on first use)."""

    WORKERS = 4
    """Rankings running at once, across the builds of concurrent turns."""

    def __init__(self, reads: Callable[[], AbstractContextManager[Session]]) -> None:
        """Rank in sessions from ``reads`` (``KiokuStore.reads``)."""
        self._reads = reads
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def start(self, steps: Callable[[Session], Steps[loader.Ranked]]) -> Future[loader.Ranked]:
        """Run ``steps`` (made for the session they run in) in a thread of their own."""
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.WORKERS, "kioku-ranking")
        return self._pool.submit(self._run, steps)

    def _run(self, steps: Callable[[Session], Steps[loader.Ranked]]) -> loader.Ranked:
        with self._reads() as session:
            return run_steps(session, steps(session))


@dataclass(frozen=True)
class _Started:
    """Stages run up to their rankings: blocks so far, stages waiting, rankings set aside."""

    rendered: dict[str, Rendered]
    waiting: dict[str, tuple[MemoryStage, loader.RankingNeed]]
    aside: dict[str, Future[loader.Ranked]]

    def here(self) -> dict[str, loader.RankingNeed]:
        """The rankings to run in the build's own session (not set aside)."""
        return {name: need for name, (_, need) in self.waiting.items() if name not in self.aside}


@dataclass(frozen=True)
class MemoryStages:
    """A build's memory stages and how their rankings run (``run`` or ``run_assumed``)."""

    stages: Mapping[str, Callable[[], MemoryStage]]
    ranking: Callable[[loader.RankingNeed], Steps[loader.Ranked]]
    """A ranking's statements, for the build's session."""
    guarded: Guard
    session: Session
    beside: RankBeside | None = None
    """Starts a large ranking on a connection of its own (``None``: every one runs here)."""
    again: Again = lambda attempt: attempt()

    def run(self) -> dict[str, Rendered]:
        """Each stage's block; the rankings they need sent together, in one round trip.

        Each stage stays guarded on its own: when the rankings sent together fail, every
        stage that needed one ranks alone, so only the failing one contributes nothing.
        With ``beside``, the largest of two or more rankings over :data:`RANK_BESIDE_FROM`
        memories or more runs on a connection of its own while the others run here. A
        ranking that fails alone runs through ``again``.
        """
        started = self._start()
        work = {name: self.ranking(need) for name, need in started.here().items()}
        return self._finish(started, _ranked_together(work, self.session))

    def run_assumed(
        self, check: Steps[T], holds: Callable[[T], bool]
    ) -> tuple[T, dict[str, Rendered] | None]:
        """``check``'s result, and each stage's block when ``holds`` it: a round trip fewer.

        As :meth:`run`, but the stages run up to their rankings on an assumption (the
        caller's), and the rankings run here are sent with ``check``'s statement, which
        reads what the assumption is about, in one round trip. When ``holds(result)``, the
        stages are finished with those rankings; when not, none is (``None``): the caller
        runs them again, from what ``check`` read. A failure to send them is raised,
        before any stage is finished.
        """
        started = self._start()
        work = {name: self.ranking(need) for name, need in started.here().items()}
        sent: list[Steps[Any]] = [check, *work.values()]
        first, *ranked = run_together(self.session, sent)
        result = cast(T, first)
        if not holds(result):
            return result, None
        return result, self._finish(started, dict(zip(work, ranked, strict=True)))

    def _start(self) -> _Started:
        """Each stage run up to its ranking, and the ranking to set aside started."""
        waiting: dict[str, tuple[MemoryStage, loader.RankingNeed]] = {}
        rendered = {
            name: self.guarded(name, partial(_started, name, make, waiting))
            for name, make in self.stages.items()
        }
        aside = _sent_aside({name: need for name, (_, need) in waiting.items()}, self.beside)
        return _Started(rendered, waiting, aside)

    def _finish(
        self, started: _Started, together: Mapping[str, loader.Ranked]
    ) -> dict[str, Rendered]:
        """Each waiting stage finished with its ranking: ``together``'s, else its own."""
        rendered, aside = dict(started.rendered), started.aside
        # The rankings run here first, while those set aside run on their own connections.
        for name in sorted(started.waiting, key=lambda name: name in aside):
            stage, need = started.waiting[name]
            ranked = partial(self._ranked_alone, together, name, need)
            if name in aside:
                ranked = partial(_ranked_aside, aside[name], ranked)
            rendered[name] = self.guarded(name, partial(_finished, name, stage, ranked))
        return rendered

    def _ranked_alone(
        self, together: Mapping[str, loader.Ranked], name: str, need: loader.RankingNeed
    ) -> loader.Ranked:
        """The stage's ranking: as sent with the others, or alone when that failed."""
        if name in together:
            return together[name]
        return self.again(lambda: run_steps(self.session, self.ranking(need)))


def _sent_aside(
    needs: Mapping[str, loader.RankingNeed], beside: RankBeside | None
) -> dict[str, Future[loader.Ranked]]:
    """The ranking set aside (the largest, when it is large enough), started."""
    if beside is None or len(needs) < 2:
        return {}
    name = max(needs, key=lambda name: _memories(needs[name]))
    return {name: beside(needs[name])} if _memories(needs[name]) >= RANK_BESIDE_FROM else {}


def _memories(need: loader.RankingNeed) -> int:
    return sum(window.total for window in need.held)


def _ranked_aside(
    future: Future[loader.Ranked], alone: Callable[[], loader.Ranked]
) -> loader.Ranked:
    """The ranking run on its own connection; ranked here when that failed."""
    try:
        return future.result()
    except Exception:
        logger.warning("kioku: a ranking on its own connection failed; ranking it again")
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
