"""Scope filters must not wreck recall: HNSW + iterative scans vs exact search."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, insert, select, text

from bench.common import new_database
from kioku import KiokuSettings, KiokuStore
from kioku._db.engine import make_engine
from kioku._db.models import Memory, Server, User
from kioku._db.vectors import (
    EXACT_SEARCH_MAX_ROWS,
    hnsw_cover,
    set_vector_schema,
    stored_embedder,
)
from kioku._domain.visibility import Visibility
from kioku._embeddings import EmbedderSpec, HashingEmbeddings
from kioku._search.candidates import vector_candidates
from kioku._search.query import scope_condition
from kioku._search.sql import SearchShape, candidates_sql, search_params

DIM = 32
ROWS = 10_000
LINEAGE = 10_000


@pytest.fixture(scope="module")
def corpus(database_url: str) -> Iterator[KiokuStore]:
    """10,000 random vectors in 100 servers (1% each) and a 10% server, own database."""
    with new_database(database_url, "kioku_recall") as url:
        yield from _corpus(url)


def _corpus(url: str) -> Iterator[KiokuStore]:
    store = KiokuStore(
        make_engine(url),
        settings=KiokuSettings(database_url=url, vector_index="hnsw"),
        embedder=EmbedderSpec(HashingEmbeddings(DIM), f"hashing-{DIM}", DIM),
    )
    store.setup()
    rng = random.Random(7)
    servers = [f"s{i}" for i in range(100)] + ["big"]
    with store.transaction() as session:
        session.execute(insert(Server), [{"id": s, "name": s} for s in servers])
        rows = []
        for i in range(ROWS):
            server = "big" if i % 10 == 0 else f"s{i % 100}"
            rows.append(
                {
                    "scope": "server",
                    "server_id": server,
                    "persona_lineage_id": LINEAGE,
                    "content": f"memory {i}",
                    "embedding": [rng.gauss(0, 1) for _ in range(DIM)],
                }
            )
        session.execute(insert(Memory), rows)
    with store.engine.begin() as connection:
        connection.execute(text("ANALYZE memories"))
    yield store
    store.close()


def exact(store: KiokuStore, visibility: Visibility, query: list[float], k: int) -> list[int]:
    distance = Memory.embedding.cosine_distance(query)
    with store.sessions() as session:
        return list(
            session.scalars(
                select(Memory.id)
                .where(scope_condition(visibility))
                .order_by(distance + 0, Memory.id)  # "+ 0" keeps the HNSW index out of it
                .limit(k)
            )
        )


@pytest.mark.parametrize("exact_max_rows", [0, EXACT_SEARCH_MAX_ROWS], ids=["hnsw", "exact"])
@pytest.mark.parametrize(("server", "share"), [("s3", 0.009), ("s42", 0.009), ("big", 0.10)])
def test_recall_at_10_under_scope_filters(
    corpus: KiokuStore, server: str, share: float, exact_max_rows: int
) -> None:
    rng = random.Random(f"{server}-{exact_max_rows}")  # fixed seed (str hash varies per run)
    visibility = Visibility(server, LINEAGE)
    found = total = 0
    for _ in range(20):
        query = [rng.gauss(0, 1) for _ in range(DIM)]
        truth = exact(corpus, visibility, query, 10)
        with corpus.sessions() as session:
            got = vector_candidates(
                session,
                visibility,
                query,
                memory_type=None,
                limit=10,
                exact_max_rows=exact_max_rows,
            )
        assert len(got) == 10
        found += len(set(got) & set(truth))
        total += len(truth)
    assert found / total >= (0.95 if exact_max_rows == 0 else 1.0), (
        f"recall@10 {found / total:.3f} for a {share:.0%} filter"
    )


def test_an_index_search_that_comes_back_short_is_done_exactly(corpus: KiokuStore) -> None:
    """A walk that stops early (``hnsw.max_scan_tuples``; here, no iterative scan and a
    short candidate list) leaves the pool unfilled: the scope is then scanned."""
    visibility = Visibility("big", LINEAGE)  # 10% of the rows: the planner takes the index
    query = [random.Random(3).gauss(0, 1) for _ in range(DIM)]
    truth = exact(corpus, visibility, query, 20)
    with corpus.sessions() as session:
        session.execute(text("SET LOCAL hnsw.iterative_scan = off"))
        session.execute(text("SET LOCAL hnsw.ef_search = 10"))  # 10 rows, about 1 of "big"
        got = vector_candidates(
            session, visibility, query, memory_type=None, limit=20, exact_max_rows=0
        )
    assert got == truth


def numbered(sql: str) -> str:
    """``sql`` with ``$1``, ``$2``… for its named parameters (as a prepared statement)."""
    names: list[str] = []

    def placeholder(match: re.Match[str]) -> str:
        if match[1] not in names:
            names.append(match[1])
        return f"${names.index(match[1]) + 1}"

    return re.sub(r"(?<![:\w]):(\w+)", placeholder, sql)


@pytest.mark.parametrize(("pool", "walk"), [(10, 100), (100, 100), (150, 200)])
def test_an_index_walk_is_asked_for_whole_walks_written_into_the_statement(
    pool: int, walk: int
) -> None:
    shape = SearchShape.of(
        Visibility("big", LINEAGE), memory_type=None, vector="hnsw", text=True, pool=pool
    )
    assert f"LIMIT {walk}) AS walked LIMIT :pool" in candidates_sql(shape)
    exact = SearchShape.of(
        Visibility("big", LINEAGE), memory_type=None, vector="exact", text=True, pool=pool
    )
    assert exact.walk == 0  # one exact statement for every pool


def test_the_hnsw_index_is_used(corpus: KiokuStore) -> None:
    with corpus.sessions() as session:
        session.execute(text("SET LOCAL hnsw.iterative_scan = relaxed_order"))
        plan = (
            session.execute(
                text(
                    "EXPLAIN SELECT id FROM memories WHERE scope = 'server' AND server_id = 'big' "
                    "ORDER BY embedding <=> (SELECT embedding FROM memories LIMIT 1) LIMIT 10"
                )
            )
            .scalars()
            .all()
        )
    assert any("ix_memories_embedding_hnsw" in line for line in plan), plan


def test_the_hnsw_index_follows_the_limits(engine: Engine, settings: KiokuSettings) -> None:
    def indexed() -> bool:
        with engine.connect() as connection:
            return bool(
                connection.execute(
                    text("SELECT 1 FROM pg_indexes WHERE indexname = 'ix_memories_embedding_hnsw'")
                ).first()
            )

    def setup(settings: KiokuSettings) -> None:
        with KiokuStore(engine, settings=settings) as store:  # closes its checkpoint pool
            store.setup()

    small = settings.model_copy(update={"vector_index": "auto"})
    setup(small.model_copy(update={"vector_index": "exact"}))
    assert not indexed()  # exact: no index
    setup(small)
    assert not indexed()  # limits of 100: every scope is searched exactly
    setup(small.model_copy(update={"max_server_memories": EXACT_SEARCH_MAX_ROWS + 1}))
    assert indexed()
    setup(small)
    assert indexed()  # auto keeps it: a command run without the limits must not undo it
    with engine.begin() as connection:  # re-typing the column (kioku reembed) keeps it too
        stored = stored_embedder(connection)
        assert stored is not None
        set_vector_schema(connection, *stored, hnsw=small.wants_hnsw_index(EXACT_SEARCH_MAX_ROWS))
    assert indexed()
    setup(small.model_copy(update={"vector_index": "exact"}))
    assert not indexed()
    with engine.begin() as connection:  # one server's own limit asks for the index too
        connection.execute(
            insert(Server).values(
                id="roomy", name="roomy", max_personal_memories=EXACT_SEARCH_MAX_ROWS + 1
            )
        )
    try:
        setup(small)
        assert indexed()
    finally:
        with engine.begin() as connection:
            connection.execute(text("DELETE FROM servers WHERE id = 'roomy'"))
        setup(small.model_copy(update={"vector_index": "exact"}))
    assert not indexed()


def test_the_hnsw_index_holds_only_the_scope_kinds_that_need_it(
    engine: Engine, settings: KiokuSettings
) -> None:
    """While the personal limits keep 20 people's memories within exact search, the index
    holds server-wide memories alone, so writing a personal memory costs it nothing; a
    personal limit beyond widens it, and nothing but ``exact`` undoes that."""

    def cover() -> str | None:
        with engine.connect() as connection:
            return hnsw_cover(connection)

    def setup(settings: KiokuSettings) -> None:
        with KiokuStore(engine, settings=settings) as store:
            store.setup()

    def hnsw_predicates() -> dict[str, str]:
        with engine.connect() as connection:
            rows = connection.execute(
                text(
                    "SELECT indexname, pg_get_expr(i.indpred, i.indrelid) FROM pg_indexes "
                    "JOIN pg_index AS i ON i.indexrelid = to_regclass(indexname) "
                    "WHERE indexdef LIKE '%USING hnsw%'"
                )
            ).all()
        return {name: predicate for name, predicate in rows}

    small = settings.model_copy(update={"vector_index": "auto"})
    exact_only = small.model_copy(update={"vector_index": "exact"})
    big_servers = small.model_copy(update={"max_server_memories": EXACT_SEARCH_MAX_ROWS + 1})
    try:
        setup(exact_only)
        assert cover() is None
        setup(big_servers)
        assert cover() == "server"
        with engine.begin() as connection:  # re-typing the column keeps it as it was
            stored = stored_embedder(connection)
            assert stored is not None
            set_vector_schema(
                connection,
                *stored,
                hnsw=big_servers.wants_hnsw_index(EXACT_SEARCH_MAX_ROWS),
                limits=big_servers.memory_limits,
            )
        assert cover() == "server"
        # 20 people's memories (a turn's participants) beyond exact search: every memory
        setup(big_servers.model_copy(update={"max_personal_memories": 101}))
        assert cover() == "every"
        assert hnsw_predicates() == {  # one index per scope kind: a walk skips the other's
            "ix_memories_embedding_hnsw": "(scope = 'server'::text)",
            "ix_memories_personal_embedding_hnsw": "(scope = 'personal'::text)",
        }
        setup(big_servers)
        assert cover() == "every"  # never narrowed
        setup(exact_only)
        assert cover() is None
        setup(small.model_copy(update={"vector_index": "hnsw"}))  # asked for: every memory
        assert cover() == "every"
        setup(exact_only)
        with engine.begin() as connection:  # one index over every memory, as set up before
            connection.execute(
                text(
                    "CREATE INDEX ix_memories_embedding_hnsw ON memories "
                    "USING hnsw (embedding halfvec_cosine_ops)"
                )
            )
        assert cover() == "every"
        setup(big_servers)
        assert hnsw_predicates() == {"ix_memories_embedding_hnsw": None}  # kept as it is
    finally:
        setup(exact_only)


def test_a_server_only_index_serves_the_server_kind_of_any_search(database_url: str) -> None:
    """With an index of server-wide memories alone, a search over a large server and many
    people's memories (each kind beyond exact search) still walks the index for the
    server's, and finds what an exact scan finds."""
    with new_database(database_url, "kioku_server_index") as url:
        _server_only_index_serves_the_server_kind(url)


def _server_only_index_serves_the_server_kind(url: str) -> None:
    people = tuple(f"p{i}" for i in range(3))
    store = KiokuStore(
        make_engine(url),
        settings=KiokuSettings(database_url=url, max_server_memories=EXACT_SEARCH_MAX_ROWS * 5),
        embedder=EmbedderSpec(HashingEmbeddings(DIM), f"hashing-{DIM}", DIM),
    )
    try:
        store.setup()
        rng = random.Random(11)
        owners = [{"scope": "server", "server_id": "big"}] * 3_000 + [
            {"scope": "personal", "user_id": people[i % 3]} for i in range(3_000)
        ]
        with store.transaction() as session:
            session.execute(insert(Server).values(id="big", name="big"))
            session.execute(insert(User), [{"id": p, "display_name": p} for p in people])
            session.execute(
                insert(Memory),
                [
                    {
                        **owner,
                        "persona_lineage_id": LINEAGE,
                        "content": f"memory {i}",
                        "embedding": [rng.gauss(0, 1) for _ in range(DIM)],
                    }
                    for i, owner in enumerate(owners)
                ],
            )
        with store.engine.begin() as connection:
            connection.execute(text("ANALYZE memories"))
            assert hnsw_cover(connection) == "server"
        visibility = Visibility("big", LINEAGE, people)
        shape = SearchShape.of(visibility, memory_type=None, vector="hnsw", text=False, pool=10)
        query = [rng.gauss(0, 1) for _ in range(DIM)]
        params = search_params(visibility, vector=query, pool=10)
        with store.sessions() as session:
            session.execute(text("SET LOCAL hnsw.iterative_scan = relaxed_order"))
            session.execute(text("SET LOCAL enable_seqscan = off"))
            plan = session.execute(text("EXPLAIN " + candidates_sql(shape)), params).scalars()
            assert any("ix_memories_embedding_hnsw" in line for line in plan)
        server_kind = SearchShape.of(
            Visibility("big", LINEAGE), memory_type=None, vector="hnsw", text=True, pool=10
        )
        with store.reads() as session:
            # A plan made once for any parameters (PostgreSQL keeps one for a prepared
            # statement when it costs no more than planning each run) walks the index too.
            if int(session.scalar(text("SHOW server_version_num"))) >= 160000:
                generic = session.scalars(
                    text("EXPLAIN (GENERIC_PLAN) " + numbered(candidates_sql(server_kind)))
                ).all()
                assert any("ix_memories_embedding_hnsw" in line for line in generic), generic
        truth = exact(store, visibility, query, 10)
        with store.sessions() as session:
            got = vector_candidates(
                session, visibility, query, memory_type=None, limit=10, exact_max_rows=0
            )
        assert len(set(truth) & set(got)) >= 9  # the walk is approximate
    finally:
        store.close()


def _exact_and_roomy(settings: KiokuSettings) -> tuple[KiokuSettings, KiokuSettings]:
    """``settings`` without HNSW indexes, and with limits that want one per scope kind."""
    roomy = {"max_server_memories": 10_000, "max_personal_memories": 10_000}
    return (
        settings.model_copy(update={"vector_index": "exact"}),
        settings.model_copy(update={"vector_index": "auto", **roomy}),
    )


def test_the_deployment_docs_index_builds_are_what_setup_keeps(
    engine: Engine, settings: KiokuSettings
) -> None:
    """docs/deployment.md's ``CREATE INDEX CONCURRENTLY`` statements, run as written before
    ``setup()``, build the indexes it would build: it finds and keeps them."""
    deployment = (Path(__file__).parents[1] / "docs" / "deployment.md").read_text()
    (block,) = [
        block
        for block in re.findall(r"```sql\n(.*?)```", deployment, re.DOTALL)
        if "CREATE INDEX CONCURRENTLY" in block
    ]
    statements = [s for s in re.sub(r"--.*", "", block).split(";") if s.strip()]
    exact_only, roomy = _exact_and_roomy(settings)
    with KiokuStore(engine, settings=exact_only) as store:
        store.setup()
    try:
        with engine.connect() as connection:
            autocommit = connection.execution_options(isolation_level="AUTOCOMMIT")
            for statement in statements:
                autocommit.execute(text(statement))
            built = autocommit.execute(
                text("SELECT indexname, indexdef FROM pg_indexes WHERE indexdef LIKE '%hnsw%'")
            ).all()
        with KiokuStore(engine, settings=roomy) as store:
            store.setup()
        with engine.connect() as connection:
            assert hnsw_cover(connection) == "every"
            kept = connection.execute(
                text("SELECT indexname, indexdef FROM pg_indexes WHERE indexdef LIKE '%hnsw%'")
            ).all()
        assert len(built) == 2 and sorted(kept) == sorted(built)
    finally:
        with KiokuStore(engine, settings=exact_only) as store:
            store.setup()


def test_setup_builds_the_kinds_missing_index_and_rebuilds_an_invalid_one(
    engine: Engine, settings: KiokuSettings
) -> None:
    """A personal index alone (a switch cut short) does not hide the server-wide one's
    absence, and an index a failed concurrent build left invalid is built again."""
    exact_only, roomy = _exact_and_roomy(settings)

    def setup(settings: KiokuSettings) -> None:
        with KiokuStore(engine, settings=settings) as store:
            store.setup()

    def usable() -> set[str]:
        with engine.connect() as connection:
            return set(
                connection.scalars(
                    text(
                        "SELECT c.relname FROM pg_index AS i "
                        "JOIN pg_class AS c ON c.oid = i.indexrelid "
                        "WHERE c.relname LIKE '%embedding_hnsw' AND i.indisvalid"
                    )
                )
            )

    both = {"ix_memories_embedding_hnsw", "ix_memories_personal_embedding_hnsw"}
    setup(exact_only)
    try:
        with engine.begin() as connection:
            connection.execute(
                text(
                    "CREATE INDEX ix_memories_personal_embedding_hnsw ON memories "
                    "USING hnsw (embedding halfvec_cosine_ops) WHERE scope = 'personal'"
                )
            )
        setup(roomy)
        assert usable() == both
        with engine.begin() as connection:
            connection.execute(
                text(
                    "UPDATE pg_index SET indisvalid = false "
                    "WHERE indexrelid = 'ix_memories_embedding_hnsw'::regclass"
                )
            )
        assert usable() == both - {"ix_memories_embedding_hnsw"}
        setup(roomy)
        assert usable() == both
    finally:
        setup(exact_only)
