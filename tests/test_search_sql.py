"""The search statements' SQL text selects exactly what ``Visibility.condition`` selects."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import create_engine, insert, select, text
from sqlalchemy.orm import Session

from kioku import KiokuStore
from kioku._db.engine import normalise_url
from kioku._db.models import Memory, Server, User
from kioku._db.vectors import EXACT_SEARCH_MAX_ROWS
from kioku._domain.visibility import Visibility
from kioku._memory.repository import GLOBAL_LINEAGE
from kioku._search.candidates import _apply_hnsw_settings, vector_candidates
from kioku._search.engine import rank_candidates, rank_ids
from kioku._search.planning import VectorPlan
from kioku._search.query import people_params, personal_owner_sql, scope_condition
from kioku._search.sql import SearchShape, candidates_sql, search_params

SERVERS = ("s1", "s2")
USERS = ("u1", "u2", "u3")
LINEAGES = (10_000, 10_001)
TYPES = ("episodic", "semantic")


@pytest.fixture
def corpus(store: KiokuStore) -> KiokuStore:
    """Memories in every combination of scope, owner, lineage, status and type."""
    rng = random.Random(3)
    dim = store.embedder.dimension
    rows = []
    for i in range(240):
        personal = i % 2 == 1
        rows.append(
            {
                "scope": "personal" if personal else "server",
                "server_id": None if personal else SERVERS[i // 2 % 2],
                "user_id": USERS[i % 3] if personal else None,
                "persona_lineage_id": (*LINEAGES, GLOBAL_LINEAGE)[i // 2 % 3]
                if personal
                else LINEAGES[i // 4 % 2],
                "content": f"memory {i} about tea",
                "status": "archived" if i % 7 == 0 else "active",
                "memory_type": TYPES[i // 5 % 2],
                "embedding": [rng.gauss(0, 1) for _ in range(dim)],
            }
        )
    with store.transaction() as session:
        session.execute(insert(Server), [{"id": s, "name": s} for s in SERVERS])
        session.execute(insert(User), [{"id": u, "display_name": u} for u in USERS])
        session.execute(insert(Memory), rows)
    return store


visibilities = st.builds(
    Visibility,
    server_key=st.sampled_from(SERVERS),
    lineage_id=st.sampled_from(LINEAGES),
    personal_user_ids=st.lists(st.sampled_from(USERS), unique=True, max_size=3).map(tuple),
    include_server=st.booleans(),
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(visibility=visibilities, memory_type=st.sampled_from([None, *TYPES]))
def test_sql_text_and_expression_agree(
    corpus: KiokuStore, visibility: Visibility, memory_type: str | None
) -> None:
    query = [0.5] * corpus.embedder.dimension
    with corpus.sessions() as session:
        wanted = select(Memory.id).where(scope_condition(visibility, memory_type))
        expected = set(session.scalars(wanted))
        for exact_max_rows in (EXACT_SEARCH_MAX_ROWS, 0):  # exact, then the HNSW statement
            found = vector_candidates(
                session,
                visibility,
                query,
                memory_type=memory_type,
                limit=1000,
                exact_max_rows=exact_max_rows,
            )
            assert set(found) == expected
            assert len(found) == len(expected)


@pytest.mark.parametrize(
    ("people", "slots"), [(["a"], 1), (["a", "b"], 2), (["a", "b", "c"], 4), (list("abcde"), 8)]
)
def test_a_filter_of_people_names_each_in_few_statements(people: list[str], slots: int) -> None:
    """Each person is a parameter of their own, so a plan made for any values knows how
    many there are; counts round up to a power of two (the last person repeated)."""
    params = people_params(people)
    assert list(params) == [f"user_{index}" for index in range(slots)]
    assert set(params.values()) == set(people)
    assert list(params.values())[: len(people)] == people
    assert personal_owner_sql(len(people)).count(":user_") == slots


def test_statements_that_cannot_hold_refuse_to_be_written() -> None:
    """No filter of nobody's memories (it would bind nothing), no walk without its pool."""
    with pytest.raises(ValueError, match="at least one person"):
        personal_owner_sql(0)
    with pytest.raises(ValueError, match="pool"):
        SearchShape.of(Visibility("s1", LINEAGES[0]), memory_type=None, vector="hnsw", text=True)


def test_exact_search_reads_the_covering_indexes(corpus: KiokuStore) -> None:
    autocommit = corpus.engine.execution_options(isolation_level="AUTOCOMMIT")
    with autocommit.connect() as connection:
        connection.execute(text("VACUUM ANALYZE memories"))  # the visibility map
    visibility = Visibility("s1", LINEAGES[0], ("u1", "u2"))
    shape = SearchShape.of(visibility, memory_type=None, vector="exact", text=False)
    params = search_params(visibility, vector=[0.5] * corpus.embedder.dimension, pool=10)
    with corpus.sessions() as session:
        session.execute(text("SET LOCAL enable_seqscan = off"))  # a 240-row table is tiny
        plan = "\n".join(
            session.execute(text("EXPLAIN " + candidates_sql(shape)), params).scalars()
        )
    assert "Index Only Scan using ix_memories_server_embeddings" in plan, plan
    assert "Index Only Scan using ix_memories_personal_embeddings" in plan, plan


def _hnsw_settings(session: Session) -> tuple[str, str]:
    row = session.execute(
        text("SELECT current_setting('hnsw.iterative_scan'), current_setting('hnsw.ef_search')")
    ).one()
    return row[0], row[1]


def test_hnsw_settings_hold_for_searches_outside_a_transaction(
    store: KiokuStore, database_url: str
) -> None:
    """An index search run without a transaction (the context build's reads) still walks
    the graph iteratively: kioku's connections carry the settings, others get them for a
    transaction the search opens, and keep nothing once back in their pool."""
    with store.reads() as session:  # kioku's engine: set when the connection was made
        assert _hnsw_settings(session) == ("relaxed_order", "100")
    foreign = create_engine(normalise_url(database_url)).execution_options(
        isolation_level="AUTOCOMMIT"
    )
    try:
        with Session(foreign) as session:
            _apply_hnsw_settings(session)
            assert _hnsw_settings(session) == ("relaxed_order", "100")  # a later statement
        with foreign.connect() as connection:  # the same pooled connection, returned
            iterative = connection.exec_driver_sql("SHOW hnsw.iterative_scan").scalar()
            assert iterative != "relaxed_order"
    finally:
        foreign.dispose()


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    visibility=visibilities,
    query=st.sampled_from(["tea", "memory 12 about tea", "coffee", ""]),
    with_vector=st.booleans(),
    limit=st.sampled_from([1, 5, 60]),
)
def test_ranking_by_ids_alone_ranks_as_the_full_rows_do(
    corpus: KiokuStore, visibility: Visibility, query: str, with_vector: bool, limit: int
) -> None:
    """The context build's lighter statement (no join, no text) ranks the same memories."""
    rng = random.Random(limit)
    vector = [rng.gauss(0, 1) for _ in range(corpus.embedder.dimension)] if with_vector else None
    now = datetime.now(UTC)
    with corpus.sessions() as session:
        full = rank_candidates(
            session, visibility, query, vector, now=now, limit=limit, candidates=limit
        )
        light = rank_ids(session, visibility, query, vector, now=now, limit=limit, candidates=limit)
    assert light == [hit.id for hit in full.hits()]


@pytest.mark.parametrize("vector", ["exact", "hnsw", None])
@pytest.mark.parametrize("with_text", [True, False])
@pytest.mark.parametrize(
    "visibility",
    [Visibility("s1", LINEAGES[0], ("u1", "u2")), Visibility("s1", LINEAGES[0], (), False)],
)
def test_the_lighter_statement_finds_the_same_candidates(
    corpus: KiokuStore, vector: VectorPlan | None, with_text: bool, visibility: Visibility
) -> None:
    params = search_params(
        visibility, vector=[0.5] * corpus.embedder.dimension, terms="tea", pool=50
    )
    found = {}
    with corpus.sessions() as session:
        _apply_hnsw_settings(session)
        for details in (True, False):
            shape = SearchShape.of(
                visibility,
                memory_type=None,
                vector=vector,
                text=with_text,
                details=details,
                pool=50,
            )
            rows = session.execute(text(candidates_sql(shape)), params).mappings().all()
            found[details] = sorted(
                (row["id"], row["score"], row["source"], row["importance"], row["created_at"])
                for row in rows
            )
    assert found[False] == found[True]
    assert found[True] or not (vector or with_text) or not visibility.include_server


@pytest.mark.parametrize("plans", [("hnsw", "exact"), ("exact", "hnsw")])
def test_each_scope_kind_may_take_its_own_path(
    corpus: KiokuStore, plans: tuple[VectorPlan, VectorPlan]
) -> None:
    """Server-wide and personal memories searched together: the kind whose plan says so
    through the index (its own walk, its own pool), the other exactly, finding what scanning
    both finds."""
    visibility = Visibility("s1", LINEAGES[0], ("u1", "u2"))
    params = search_params(visibility, vector=[0.5] * corpus.embedder.dimension, pool=50)
    found = {}
    with corpus.sessions() as session:
        _apply_hnsw_settings(session)
        for vector in (plans, "exact"):
            shape = SearchShape.of(visibility, memory_type=None, vector=vector, text=False, pool=50)
            rows = session.execute(text(candidates_sql(shape)), params).all()
            found[vector] = sorted((row.id, row.score) for row in rows)
    assert found[plans] == found["exact"] and found["exact"]
