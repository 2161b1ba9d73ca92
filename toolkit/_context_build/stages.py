"""The memory blocks' stages, run so that the rankings they need go out together.

A memory block whose memories overflow its budget is ranked by the user's message. The
server-wide and the personal block each need a ranking: :func:`run_memory_stages` runs
both stages up to their rankings, sends the two rankings' statements in one round trip
(:func:`kioku._db.driver.run_together`), and gives each stage its own.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator, Mapping
from functools import partial
from typing import cast

from sqlalchemy.orm import Session

from kioku._context_build import loader
from kioku._context_build.render import Rendered
from kioku._db.driver import Steps, run_steps, run_together

logger = logging.getLogger(__name__)


MemoryStage = Generator[loader.RankingNeed, loader.Ranked, Rendered]
"""A memory block's stage: it yields the ranking it needs when its memories overflow the
block, is sent the ranking, and returns the block."""
Guard = Callable[[str, Callable[[], Rendered]], Rendered]
"""Runs a stage; a failure is logged and the stage contributes nothing."""


def run_memory_stages(
    stages: Mapping[str, Callable[[], MemoryStage]],
    ranking: Callable[[loader.RankingNeed], Steps[loader.Ranked]],
    guarded: Guard,
    session: Session,
) -> dict[str, Rendered]:
    """Each stage's block; the rankings they need sent together, in one round trip.

    Each stage stays guarded on its own: when the rankings sent together fail, every
    stage that needed one ranks alone, so only the failing one contributes nothing.
    """
    rendered: dict[str, Rendered] = {}
    waiting: dict[str, tuple[MemoryStage, loader.RankingNeed]] = {}

    for name, make in stages.items():
        rendered[name] = guarded(name, partial(_started, name, make, waiting))
    together = _ranked_together(
        {name: ranking(need) for name, (_, need) in waiting.items()}, session
    )

    for name, (stage, need) in waiting.items():
        ranked = partial(_ranked_alone, together, name, session, ranking, need)
        rendered[name] = guarded(name, partial(_finished, name, stage, ranked))
    return rendered


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


def _ranked_alone(
    together: Mapping[str, loader.Ranked],
    name: str,
    session: Session,
    ranking: Callable[[loader.RankingNeed], Steps[loader.Ranked]],
    need: loader.RankingNeed,
) -> loader.Ranked:
    """The stage's ranking: as sent with the others, or alone when that failed."""
    return together[name] if name in together else run_steps(session, ranking(need))


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
