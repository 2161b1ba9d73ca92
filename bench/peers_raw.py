"""The hand-written SQL floors (:mod:`bench.peers`): kioku's turn's SQL work over psycopg.

``raw_sql_floor`` does the SQL work of kioku's turn in one pipelined read transaction and
two pipelined write transactions; ``raw_sql_vector_floor`` is the earlier floor (vector
retrieval only, one write transaction), kept for reference.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from bench.common import libpq
from bench.peer_data import (
    KEEP_MESSAGES,
    OTHER_CHANNELS_READ,
    REPLY,
    SCHEMAS,
    UPDATABLE,
    PeerData,
    Peers,
    Prompt,
    precomputed,
    seed_messages,
    stm_message,
    update_text,
)
from kioku._db.vectors import EXACT_SEARCH_MAX_ROWS

WINDOW = 50
"""Newest memories of a scope the raw floor reads, as kioku's memory windows do."""

EXACT_MAX_ROWS = EXACT_SEARCH_MAX_ROWS
"""Above this many rows in a scope, kioku searches through HNSW; the floor does too."""

RAW_SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS memories (
    id bigserial PRIMARY KEY,
    scope text NOT NULL,
    server_id text,
    user_id text,
    content text NOT NULL,
    embedding halfvec({dim}) NOT NULL,
    importance real NOT NULL DEFAULT 0.5,
    search_vector tsvector GENERATED ALWAYS AS (to_tsvector('english', content)) STORED,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS memories_server_newest ON memories (server_id, created_at DESC, id DESC)
    WHERE scope = 'server';
CREATE INDEX IF NOT EXISTS memories_personal_newest ON memories (user_id, created_at DESC, id DESC)
    WHERE scope = 'personal';
CREATE INDEX IF NOT EXISTS memories_search ON memories USING gin (search_vector);
CREATE TABLE IF NOT EXISTS memory_history (
    id bigserial PRIMARY KEY,
    memory_id bigint NOT NULL,
    old_content text,
    new_content text NOT NULL,
    changed_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS settings (
    server_id text PRIMARY KEY,
    personal_memories_enabled boolean NOT NULL DEFAULT true,
    self_teaching_enabled boolean NOT NULL DEFAULT true,
    private_channels text[] NOT NULL DEFAULT '{{}}'
);
CREATE TABLE IF NOT EXISTS stm (
    kind text NOT NULL,
    owner text NOT NULL,
    channel text NOT NULL,
    messages jsonb NOT NULL,
    summary text,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (kind, owner, channel)
);
CREATE INDEX IF NOT EXISTS stm_newest ON stm (kind, owner, updated_at DESC);
"""

RAW_SETTINGS = """
SELECT personal_memories_enabled, self_teaching_enabled, private_channels
FROM settings WHERE server_id = %s
"""
RAW_SERVER = """
SELECT content FROM memories WHERE scope = 'server' AND server_id = %s
ORDER BY created_at DESC, id DESC LIMIT %s
"""
RAW_PERSONAL = """
SELECT u.user_id, m.content FROM unnest(%s::text[]) AS u(user_id)
CROSS JOIN LATERAL (
    SELECT content FROM memories
    WHERE scope = 'personal' AND user_id = u.user_id
    ORDER BY created_at DESC, id DESC LIMIT %s
) m
"""
RAW_RELEVANT = """
SELECT content FROM memories WHERE scope = 'server' AND server_id = %s
ORDER BY embedding <=> %s::halfvec LIMIT 10
"""
RAW_RANKING = """
(SELECT id, content, importance, created_at, 'vector' FROM memories WHERE {scope}
 ORDER BY embedding <=> %(vector)s::halfvec LIMIT %(pool)s)
UNION ALL
(SELECT id, content, importance, created_at, 'text'
 FROM memories, to_tsquery('english', %(words)s) q WHERE {scope} AND search_vector @@ q
 ORDER BY ts_rank_cd(search_vector, q) DESC, id LIMIT %(pool)s)
"""
RAW_RANK_SERVER = RAW_RANKING.format(scope="scope = 'server' AND server_id = %(owner)s")
RAW_RANK_PERSONAL = RAW_RANKING.format(scope="scope = 'personal' AND user_id = ANY(%(owners)s)")
RAW_CHANNEL = "SELECT messages FROM stm WHERE kind = 'server' AND owner = %s AND channel = %s"
RAW_OTHERS = """
SELECT channel, messages, summary FROM stm WHERE kind = 'server' AND owner = %s AND channel <> %s
ORDER BY updated_at DESC LIMIT %s
"""
RAW_HISTORY = """
INSERT INTO memory_history (memory_id, old_content, new_content)
SELECT id, content, %s FROM memories WHERE id = %s
"""
RAW_UPDATE = """
UPDATE memories SET content = %s, embedding = %s::halfvec, updated_at = now() WHERE id = %s
"""
RAW_STM_UPSERT = """
INSERT INTO stm AS s (kind, owner, channel, messages) VALUES (%s, %s, %s, %s::jsonb)
ON CONFLICT (kind, owner, channel) DO UPDATE SET
    messages = (
        SELECT coalesce(jsonb_agg(t.e ORDER BY t.n), '[]'::jsonb)
        FROM jsonb_array_elements(s.messages || EXCLUDED.messages) WITH ORDINALITY AS t(e, n)
        WHERE t.n > jsonb_array_length(s.messages || EXCLUDED.messages) - %s
    ),
    updated_at = now()
"""
RANKED = WINDOW
"""Memories each of the same-work floor's rankings keeps (from 2 × as many candidates)."""


def vector_text(vector: Sequence[float]) -> str:
    """The pgvector text form of ``vector``."""
    return "[" + ",".join(f"{x:.6g}" for x in vector) + "]"


def any_word(text: str) -> str:
    """``to_tsquery`` text matching any word of ``text`` (letters and digits only)."""
    words = "".join(c if c.isalnum() else " " for c in text.lower()).split()
    return " | ".join(dict.fromkeys(words)) or "nothing"


def fused(rows: Sequence[tuple[Any, ...]], limit: int) -> list[str]:
    """Contents of the ``limit`` best of a ranking's rows: RRF over both lists, importance.

    A row is ``(id, content, importance, created_at, source)``; rows come in each source's
    rank order.
    """
    scores: dict[int, float] = {}
    contents: dict[int, str] = {}
    ranks: dict[str, int] = {}
    for memory_id, content, importance, _, source in rows:
        ranks[source] = ranks.get(source, 0) + 1
        scores[memory_id] = scores.get(memory_id, 0.1 * importance) + 1 / (60 + ranks[source])
        contents[memory_id] = content
    best = sorted(scores, key=lambda m: (-scores[m], m))[:limit]
    return [contents[m] for m in best]


def load_raw(data: PeerData, ext: str) -> None:
    """Create the floors' tables in their schema and load the same rows."""
    with psycopg.connect(libpq(data.url, SCHEMAS["raw_sql_floor"], ext)) as conn:
        conn.execute(RAW_SCHEMA_SQL.format(dim=int(data.dim)).encode())
        at = datetime.now(UTC) - timedelta(days=1)
        rows: list[tuple[str, str | None, str | None, str]] = [
            ("server", data.server_id, None, t) for t in data.server_texts
        ]
        for user, texts in data.personal.items():
            rows += [("personal", None, user, t) for t in texts]
        with conn.cursor() as cur:
            for start in range(0, len(rows), 1000):
                chunk = rows[start : start + 1000]
                vectors = data.embeddings.embed_documents([r[3] for r in chunk])
                cur.executemany(
                    "INSERT INTO memories (scope, server_id, user_id, content, embedding,"
                    " created_at) VALUES (%s, %s, %s, %s, %s::halfvec, %s)",
                    [
                        (*r, vector_text(v), at + timedelta(microseconds=start + k))
                        for k, (r, v) in enumerate(zip(chunk, vectors, strict=True))
                    ],
                )
            cur.execute(
                "INSERT INTO settings (server_id) VALUES (%s) ON CONFLICT DO NOTHING",
                (data.server_id,),
            )
            stm_rows = [
                ("server", data.server_id, f"channel-{c}", json.dumps(seed_messages(f"c{c}")))
                for c in range(data.channels)
            ]
            current = json.dumps(seed_messages("current"))
            stm_rows += [
                ("server", data.server_id, "current", current),
                ("user", data.speaker, "current", current),
            ]
            cur.executemany(
                "INSERT INTO stm (kind, owner, channel, messages) VALUES (%s, %s, %s, %s::jsonb)",
                stm_rows,
            )
        largest = max([len(data.server_texts), *map(len, data.personal.values())])
        if largest > EXACT_MAX_ROWS:
            conn.execute(
                "CREATE INDEX IF NOT EXISTS memories_hnsw ON memories"
                " USING hnsw (embedding halfvec_cosine_ops)"
            )
        conn.commit()
        conn.autocommit = True
        for table in ("memories", "settings", "stm"):
            conn.execute(f"VACUUM ANALYZE {table}".encode())


@dataclass
class _RawReads:
    """The cursors of one turn's read transaction, read once it is committed."""

    settings: psycopg.Cursor[Any] | None
    server: psycopg.Cursor[Any]
    personal: psycopg.Cursor[Any]
    relevant: psycopg.Cursor[Any]
    personal_relevant: psycopg.Cursor[Any] | None
    channel: psycopg.Cursor[Any]
    others: psycopg.Cursor[Any]


@dataclass
class RawFloor:
    """One floor's connection and its turn's SQL: a pipelined read, then pipelined writes.

    With ``same_work``, the reads are kioku's turn's (settings, both hybrid rankings);
    without, the server's 10 nearest by vector are its only retrieval.
    """

    conn: psycopg.Connection[Any]
    data: PeerData
    same_work: bool
    updatable: list[int]
    vectors: dict[str, str]
    """Every question's and update text's vector, in pgvector's text form."""
    prompt: Prompt = field(default_factory=Prompt)
    people: list[str] = field(init=False)
    """The participants, in the data's order."""

    def __post_init__(self) -> None:
        self.people = list(self.data.personal)

    @property
    def name(self) -> str:
        """The peer's name in :data:`bench.peers.PEERS`."""
        return floor_name(same_work=self.same_work)

    def send_reads(self, question: str) -> _RawReads:
        """The turn's read transaction, in one pipeline."""
        conn, data = self.conn, self.data
        with conn.pipeline():
            conn.execute("BEGIN")
            settings = conn.execute(RAW_SETTINGS, (data.server_id,)) if self.same_work else None
            server = conn.execute(RAW_SERVER, (data.server_id, WINDOW))
            personal = conn.execute(RAW_PERSONAL, (self.people, WINDOW))
            personal_relevant = None
            if self.same_work:
                ranking = {
                    "vector": self.vectors[question],
                    "words": any_word(question),
                    "pool": 2 * RANKED,
                    "owner": data.server_id,
                    "owners": self.people,
                }
                relevant = conn.execute(RAW_RANK_SERVER, ranking)
                personal_relevant = conn.execute(RAW_RANK_PERSONAL, ranking)
            else:
                relevant = conn.execute(RAW_RELEVANT, (data.server_id, self.vectors[question]))
            channel = conn.execute(RAW_CHANNEL, (data.server_id, "current"))
            others = conn.execute(RAW_OTHERS, (data.server_id, "current", OTHER_CHANNELS_READ))
            conn.execute("COMMIT")
        return _RawReads(settings, server, personal, relevant, personal_relevant, channel, others)

    def memory_sections(self, reads: _RawReads) -> list[tuple[str, Sequence[str]]]:
        """The memory sections of the prompt, from the turn's reads."""
        by_user: dict[str, list[str]] = {u: [] for u in self.people}
        for user, content in reads.personal.fetchall():
            by_user[user].append(content)
        relevant = reads.relevant.fetchall()
        personal_rows: list[str] = []
        if reads.settings is None or reads.personal_relevant is None:
            relevant_rows = [r[0] for r in relevant]
        else:
            personal_on = bool(reads.settings.fetchone()[0])  # type: ignore[index]
            relevant_rows = fused(relevant, RANKED)
            shown = {c for texts in by_user.values() for c in texts}
            ranked = fused(reads.personal_relevant.fetchall(), RANKED) if personal_on else []
            personal_rows = [c for c in ranked if c not in shown]
        server_rows = [r[0] for r in reads.server.fetchall()]
        sections: list[tuple[str, Sequence[str]]] = [
            ("Server memories", list(dict.fromkeys(relevant_rows + server_rows)))
        ]
        if personal_rows:
            sections.append(("Also about the people here", personal_rows))
        return sections + [(f"About {u}", by_user[u]) for u in self.people]

    def read(self, question: str) -> tuple[list[tuple[str, Sequence[str]]], int]:
        """The prompt's sections, and how many memories they hold."""
        reads = self.send_reads(question)
        sections = self.memory_sections(reads)
        found = sum(len(items) for _, items in sections)
        current = reads.channel.fetchone()
        sections.append(("This channel", [m["text"] for m in current[0]] if current else []))
        others = reads.others.fetchall()
        sections += [(f"In {c}", [m["text"] for m in msgs]) for c, msgs, _ in others]
        return sections, found

    def write(self, i: int, question: str) -> None:
        """The tool's write, then the capture's (one transaction for the vector floor)."""
        data = self.data
        content = update_text(data.speaker, i)
        memory_id = self.updatable[i % len(self.updatable)]
        new = json.dumps([stm_message("user", question), stm_message("assistant", REPLY)])
        tool: list[tuple[str, tuple[Any, ...]]] = [
            (RAW_HISTORY, (content, memory_id)),
            (RAW_UPDATE, (content, self.vectors[content], memory_id)),
        ]
        capture: list[tuple[str, tuple[Any, ...]]] = [
            (RAW_STM_UPSERT, ("server", data.server_id, "current", new, KEEP_MESSAGES)),
            (RAW_STM_UPSERT, ("user", data.speaker, "current", new, KEEP_MESSAGES)),
        ]
        # The same work: the tool's write is committed, its answer back, before the model
        # replies, and the capture saves that reply (two transactions, as every other
        # contender's turn has). The vector floor wrote both in one.
        for statements in [tool, capture] if self.same_work else [tool + capture]:
            with self.conn.pipeline():
                self.conn.execute("BEGIN")
                for sql, args in statements:
                    self.conn.execute(sql, args)
                self.conn.execute("COMMIT")


def floor_name(*, same_work: bool) -> str:
    """``raw_sql_floor`` (the same SQL work as kioku's turn) or ``raw_sql_vector_floor``."""
    return "raw_sql_floor" if same_work else "raw_sql_vector_floor"


def raw_floor(
    resources: ExitStack, data: PeerData, conn_url: str, ext: str, *, same_work: bool
) -> RawFloor:
    """A floor on a connection of its own (closed with ``resources``), its vectors computed."""
    schema = SCHEMAS[floor_name(same_work=same_work)]
    # Transactions are explicit BEGIN ... COMMIT inside each pipeline: psycopg's implicit
    # transactions (autocommit off) cost two extra round trips per pipeline.
    conn = resources.enter_context(psycopg.connect(libpq(conn_url, schema, ext), autocommit=True))
    conn.execute("SET hnsw.iterative_scan = relaxed_order")  # once per connection
    updatable = [
        int(r[0])
        for r in conn.execute(
            "SELECT id FROM memories WHERE scope = 'personal' AND user_id = %s"
            " ORDER BY id LIMIT %s",
            (data.speaker, UPDATABLE),
        )
    ]
    embeddings = precomputed(data)
    texts = [*data.questions, *(update_text(data.speaker, i) for i in range(97 * 13))]
    vectors = {t: vector_text(embeddings.embed_query(t)) for t in dict.fromkeys(texts)}
    return RawFloor(conn, data, same_work, updatable, vectors)


def build_raw(
    peers: Peers, data: PeerData, conn_url: str, ext: str, load: bool, *, same_work: bool
) -> None:
    """``raw_sql_floor`` (``same_work``) or ``raw_sql_vector_floor``, loaded once for both."""
    if load and not peers.raw_loaded:
        load_raw(data, ext)
        peers.raw_loaded = True
    floor = raw_floor(peers.resources, data, conn_url, ext, same_work=same_work)

    def turn(i: int) -> None:
        question = data.questions[i % len(data.questions)]
        sections, peers.found[floor.name] = floor.read(question)
        floor.prompt.render(sections)
        floor.write(i, question)

    peers.turns[floor.name] = turn
