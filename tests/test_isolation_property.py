"""Multi-tenant isolation as a property: for random turns over a generated corpus of
servers, lineages, users and privacy levels, nothing rendered, returned or changed by a
tool lies outside what the turn may see. 200 cases here; the benchmark runs 10,000."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from kioku import KiokuStore, TurnContext
from kioku._context_build.build import ContextBuilder
from kioku._db.models import Memory
from tests.isolation_corpus import Corpus, build_corpus, turns, violations

EXAMPLES = int(os.environ.get("KIOKU_ISOLATION_EXAMPLES", "200"))


def test_no_turn_sees_or_changes_another_scope(store: KiokuStore) -> None:
    corpus: Corpus = build_corpus(store)
    builder = ContextBuilder(store)
    seen: set[int] = set()

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(context=turns(corpus), probe=st.integers(min_value=0, max_value=10_000))
    def check(context: TurnContext, probe: int) -> None:
        assert list(violations(store, corpus, builder, context, probe)) == []
        seen.update(corpus.allowed(context))

    check()
    kinds = {corpus.memories[marker].scope for marker in seen}
    assert kinds == {"server", "personal"}  # the turns did see memories of both kinds
    with store.sessions() as session:
        assert session.scalar(select(func.count()).select_from(Memory)) == len(corpus.memories)
        assert not session.scalar(
            select(func.count()).select_from(Memory).where(Memory.content == "hacked")
        )
