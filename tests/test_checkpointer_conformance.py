"""``store.checkpointer()`` passes LangGraph's checkpointer conformance suite.

``langgraph-checkpoint-conformance`` drives the async API (``aput``, ``alist``…), which
kioku's saver runs in worker threads on its pool: every base capability, and each
extended one the saver implements (``prune``; PostgresSaver has no ``copy_thread`` or
``delete_for_runs``), on a fresh database, straight to the server and through PgBouncer
in transaction mode.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import BASE_CAPABILITIES, Capability
from langgraph.checkpoint.conformance.report import CapabilityReport

from kioku import KiokuSettings, KiokuStore
from kioku._db.engine import make_engine

IMPLEMENTED = {*BASE_CAPABILITIES, Capability.PRUNE}


def _report(url: str) -> CapabilityReport:
    async def kioku_checkpointer() -> AsyncIterator[BaseCheckpointSaver[str]]:
        store = KiokuStore(make_engine(url), settings=KiokuSettings(database_url=url))
        try:
            yield store.checkpointer()
        finally:
            await store.aclose()

    registered = checkpointer_test(name="kioku")(kioku_checkpointer)
    return asyncio.run(validate(registered))


def _assert_conforms(report: CapabilityReport) -> None:
    failures = {name: r.failures for name, r in report.results.items() if r.failures}
    assert not failures, failures
    detected = {Capability(name) for name, r in report.results.items() if r.detected}
    assert detected == IMPLEMENTED
    for capability in IMPLEMENTED:
        result = report.results[capability.value]
        assert result.passed is True and result.tests_passed > 0, (capability, result)
    assert report.passed_all()


def test_the_checkpointer_conforms(fresh_database: str) -> None:
    settings = KiokuSettings(database_url=fresh_database)
    with KiokuStore(make_engine(fresh_database), settings=settings) as store:
        store.setup()
    _assert_conforms(_report(fresh_database))


def test_the_checkpointer_conforms_through_the_pooler(pooled_database: str) -> None:
    _assert_conforms(_report(pooled_database))
