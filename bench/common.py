"""Shared benchmark plumbing: a fresh database, timing, percentiles."""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from psycopg.conninfo import make_conninfo
from sqlalchemy import text
from sqlalchemy.engine import make_url

from kioku import KiokuSettings, KiokuStore, Participant, Persona, load_settings
from kioku._db.embedded import EmbeddedPostgres
from kioku._db.engine import make_engine
from kioku._db.opening import open_database
from kioku._embeddings import EmbedderSpec
from kioku._errors import one_line

SHOWN_MEMORY_ID = re.compile(r"\bID:(\d+) ")
"""A memory's id as the context's memory blocks show it (``ID:N (when) text``)."""


@contextmanager
def bench_database(name: str) -> Iterator[str]:
    """URL of a new database ``name`` on KIOKU_DATABASE_URL's server, or an embedded one.

    An embedded server made for the run is stopped and its data directory removed after.
    """
    settings = load_settings()
    embedded = None
    base = settings.database_url
    if base is None:
        embedded = EmbeddedPostgres(Path(tempfile.mkdtemp(prefix="kioku-bench-")))
        base = embedded.url
    try:
        with new_database(base, name) as url:
            yield url
    finally:
        if embedded is not None:
            embedded.stop()
            shutil.rmtree(embedded.data_dir, ignore_errors=True)


@contextmanager
def new_database(server_url: str, name: str) -> Iterator[str]:
    """URL of a new, empty database ``name`` on the server of ``server_url``; dropped after.

    With no statement timeout: ``DROP DATABASE`` waits for a checkpoint and for the
    sessions it ends, which takes a while on a busy machine.
    """
    admin = make_engine(server_url, statement_timeout_ms=0).execution_options(
        isolation_level="AUTOCOMMIT"
    )
    try:
        with admin.connect() as connection:
            connection.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            connection.execute(text(f"CREATE DATABASE {name}"))
        try:
            yield admin.url.set(database=name).render_as_string(hide_password=False)
        finally:
            with admin.connect() as connection:
                connection.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
    finally:
        admin.dispose()


def bench_data(name: str) -> Path | None:
    """``name`` in ``KIOKU_BENCH_DATA``, or in ``../shared/bench-data`` beside the clone."""
    folders = [os.environ.get("KIOKU_BENCH_DATA", "")]
    folders.append(str(Path(__file__).resolve().parents[2] / "shared" / "bench-data"))
    for folder in folders:
        if folder and (Path(folder) / name).is_file():
            return Path(folder) / name
    return None


def open_store(url: str, embedder: EmbedderSpec, **settings: object) -> KiokuStore:
    """A store on ``url`` with ``embedder``, schema set up.

    Its engine is made from the settings as ``KiokuStore.open`` makes it (prepared
    statements, statement timeout).
    """
    chosen = KiokuSettings(database_url=url, **settings)  # type: ignore[arg-type]
    store = KiokuStore(
        open_database(chosen).engine,
        settings=chosen,
        embedder=embedder,
    )
    store.setup()
    return store


def seed_accounts(
    store: KiokuStore,
    server_id: str,
    server_name: str,
    people: Sequence[Participant],
    *,
    members: bool = False,
) -> Persona:
    """A server (self-teaching on), its persona "Kioku" and ``people``; the persona.

    With ``members``, the people are members of the server too.
    """
    with store.accounts() as accounts:
        accounts.upsert_server(server_id, server_name, self_teaching_enabled=True)
        persona = accounts.create_persona(server_id, "Kioku")
        for person in people:
            accounts.upsert_user(person.user_id, person.display_name)
            if members:
                accounts.add_member(server_id, person.user_id)
    return persona


def percentile(samples: list[float], q: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def timed_ms(run: Callable[[], object], repeat: int, warmup: int = 10) -> tuple[float, float]:
    """(p50, p95) in milliseconds."""
    for _ in range(warmup):
        run()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples), percentile(samples, 0.95)


def libpq(url: str, schema: str | None = None, extension_schema: str = "public") -> str:
    """The libpq conninfo of SQLAlchemy ``url``, optionally with ``schema`` first on the path."""
    uri = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    if schema is None:
        return make_conninfo(uri)
    path = ",".join(dict.fromkeys([schema, extension_schema, "public"]))
    return make_conninfo(uri, options=f"-csearch_path={path}")


def prepare_database(url: str, schemas: Sequence[str]) -> str:
    """Create the vector extension (if missing) and ``schemas``; the extension's schema."""
    with psycopg.connect(libpq(url), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        row = conn.execute(
            "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace"
            " WHERE e.extname = 'vector'"
        ).fetchone()
        for schema in schemas:
            conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
    assert row is not None
    return str(row[0])


def analyze_store(conninfo: str) -> None:
    """Analyse a ``PostgresStore``'s tables after a bulk load, as autovacuum soon would.

    ``conninfo`` puts the store's schema first on the path. kioku's and the raw floor's
    tables get the same after their loads. Without it a peer's plans depend on whether
    autovacuum has come by yet: its HNSW search at 10,000 memories read 10.7 ms in one
    step and 29.9 ms (an exact scan's time) in the next.
    """
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE store")
        conn.execute("VACUUM ANALYZE store_vectors")


def read_samples(path: Path) -> list[dict[str, Any]]:
    """The LoCoMo samples of ``path``; a file that is not one exits 2 with one line."""
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        print(f"cannot read {path}: {one_line(exc)} (--data takes LoCoMo's JSON)", file=sys.stderr)
        raise SystemExit(2) from None
    if not isinstance(data, list) or not all(
        isinstance(sample, dict) and {"conversation", "qa"} <= sample.keys() for sample in data
    ):
        print(
            f"{path} is not LoCoMo's JSON (a list of samples with conversation and qa)",
            file=sys.stderr,
        )
        raise SystemExit(2)
    return data
