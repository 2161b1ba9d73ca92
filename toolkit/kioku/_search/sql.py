"""The search statements as SQL text: pure rendering, cached per shape.

Search runs on every turn that retrieves, so its statements are written out once per
shape (which scope kinds, which candidate searches) instead of being rebuilt by the
SQL expression language on every call: that alone cost more than the query for small
scopes (measured in bench/RESULTS.md). ``Visibility.condition`` is the same filter
for the expression language; tests check both select the same memories.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any

from kioku._db.text_search import EXACT_WEIGHT, TEXT_CONFIG, TEXT_QUERY
from kioku._db.vectors import halfvec_text
from kioku._domain.visibility import Visibility
from kioku._question_words import QUESTION_WORDS
from kioku._search.planning import HNSW_EF_SEARCH, VectorPlan, VectorPlans
from kioku._search.query import SERVER_OWNER_SQL, people_params, people_slots, personal_owner_sql
from kioku._spaceless import RUN_CLASS

DETAIL_COLUMNS = (
    "id",
    "scope",
    "server_id",
    "user_id",
    "memory_type",
    "content",
    "importance",
    "decay_rate",
    "created_at",
    "persona_lineage_id",
    "updated_at",
    "event_time",
    "happened_at",
)
"""Columns every candidate row carries, besides ``score`` and ``source``."""
RANKING_COLUMNS = ("id", "importance", "decay_rate", "created_at", "happened_at")
"""Columns a ranking needs (relevance, time window) when the caller holds the rest: the
statement then skips its join back to ``memories`` (``SearchShape.details`` off)."""
_RANKING_TYPES = ("bigint", "float8", "float8", "timestamptz", "timestamptz")


@dataclass(frozen=True)
class SearchShape:
    """What varies between search statements."""

    server: bool
    """Server memories of the lineage are visible."""
    people: int
    """Slots of the filter of participants whose personal memories are visible
    (:func:`~kioku._search.query.people_slots`; ``0``: none)."""
    typed: bool
    """Only memories of one ``memory_type``."""
    important: bool
    """Only memories of at least ``min_importance``."""
    vector: VectorPlans | None
    """How each visible scope kind's vector candidates are found, server-wide memories
    first (``None``: no query vector)."""
    text: bool
    """Whether full-text candidates are wanted."""
    timed: bool = False
    """Only memories whose event happened from ``:since`` until ``:until``."""
    details: bool = True
    """Rows carry :data:`DETAIL_COLUMNS`; else only :data:`RANKING_COLUMNS`."""
    walk: int = 0
    """Rows an index walk is asked for before ``:pool`` of them are kept
    (:func:`walk_size`); ``0`` when no scope kind is searched through the index."""

    @classmethod
    def of(
        cls,
        visibility: Visibility,
        *,
        memory_type: str | None,
        vector: VectorPlan | VectorPlans | None,
        text: bool,
        min_importance: float | None = None,
        timed: bool = False,
        details: bool = True,
        pool: int = 0,
    ) -> SearchShape:
        """The shape of a search over ``visibility`` (one ``vector`` plan: for every kind).

        ``pool``: the candidates each search keeps (:attr:`walk` comes from it).
        """
        if isinstance(vector, str):
            vector = (vector,) * len(visibility.kinds())
        walks = vector is not None and "hnsw" in vector
        people = len(visibility.personal_user_ids)
        if walks and pool < 1:
            raise ValueError("an index walk needs the pool of candidates it keeps")
        return cls(
            server=visibility.include_server,
            people=people_slots(people) if people else 0,
            typed=memory_type is not None,
            important=min_importance is not None,
            vector=vector,
            text=text,
            timed=timed,
            details=details,
            walk=walk_size(pool) if walks else 0,
        )


def walk_size(pool: int) -> int:
    """Rows an index walk is asked for, to keep ``pool``: whole walks of ``hnsw.ef_search``.

    The statement holds this number itself, not a parameter. Planning a limit it cannot
    see, PostgreSQL assumes a tenth of the scope and prefers a sort over the index walk in
    a plan made for any parameters (a generic plan), so it planned every search of a large
    scope again (custom plans, about 0.5 ms of a 4 ms search at 10,000 memories). A walk
    collects ``hnsw.ef_search`` rows before it returns any, so asking for that many costs
    little more than asking for fewer; one walk's worth keeps the statements few.
    """
    return HNSW_EF_SEARCH * max(1, -(-pool // HNSW_EF_SEARCH))


def _owners(shape: SearchShape) -> list[str]:
    """The scope-key filter of each visible scope kind, each served by its own index."""
    owners = []
    if shape.server:
        owners.append(SERVER_OWNER_SQL)
    if shape.people:
        owners.append(personal_owner_sql(shape.people))
    return owners


def _parts(shape: SearchShape) -> list[str]:
    """One filter per visible scope kind, each answered by its own (covering) index."""
    extra = " AND status = 'active'"
    if shape.typed:
        extra += " AND memory_type = :memory_type"
    if shape.important:
        extra += " AND importance >= :min_importance"  # a float column: compared as numbers
    if shape.timed:
        extra += (
            " AND happened_at >= CAST(:since AS timestamptz)"
            " AND happened_at < CAST(:until AS timestamptz)"
        )
    return [owner + extra for owner in _owners(shape)]


def _any_part(shape: SearchShape) -> str:
    parts = _parts(shape)
    return "(" + " OR ".join(f"({part})" for part in parts) + ")" if parts else "false"


_DISTANCE = "embedding <=> CAST(:vector AS halfvec)"


def _carried(shape: SearchShape) -> str:
    """The ranking's columns, carried by each search when no join adds the details."""
    return "" if shape.details else "".join(f", {c}" for c in RANKING_COLUMNS[1:])


def _vector_hits(shape: SearchShape) -> str:
    carried = _carried(shape)
    plans = shape.vector or ()
    # Each scope kind on its own (each has its own HNSW index, or the server's alone):
    # through the index when its plan says so, pgvector's iterative scan filling the
    # limit; else exactly, from its covering index. There the distance is computed once,
    # in a subquery ("OFFSET 0" keeps it one), and sorting by its output keeps HNSW out.
    nothing = "".join(
        f", NULL::{kind} AS {column}"
        for column, kind in zip(RANKING_COLUMNS[1:], _RANKING_TYPES[1:], strict=True)
    )
    per_part = [
        f"({_nearest_by_index(shape, part)})"
        if plan == "hnsw"
        else (
            f"(SELECT id, score, NULL::float8 AS matched{carried} FROM "
            f"(SELECT id, {_DISTANCE} AS score{carried} FROM memories "
            f"WHERE {part} AND embedding IS NOT NULL OFFSET 0) AS scored "
            "ORDER BY score, id LIMIT :pool)"
        )
        for part, plan in zip(_parts(shape), plans, strict=True)
    ] or [
        "(SELECT NULL::bigint AS id, NULL::float8 AS score, NULL::float8 AS matched"
        f"{nothing if carried else ''} WHERE false)"
    ]
    return f"SELECT id, score, matched{carried} FROM ({' UNION ALL '.join(per_part)}) AS nearest"


def _nearest_by_index(shape: SearchShape, where: str) -> str:
    """The ``:pool`` nearest rows matching ``where``, by a walk of the HNSW index.

    The walk is asked for ``shape.walk`` rows (:func:`walk_size`); the first ``:pool``
    it returns are kept.
    """
    carried = _carried(shape)
    return (
        f"SELECT id, score, matched{carried} FROM "
        f"(SELECT id, {_DISTANCE} AS score, NULL::float8 AS matched{carried} "
        f"FROM memories WHERE {where} AND embedding IS NOT NULL "
        f"ORDER BY {_DISTANCE} LIMIT {int(shape.walk)}) AS walked LIMIT :pool"
    )


STOP_WORD_LANGUAGES = (
    "danish",
    "dutch",
    "finnish",
    "french",
    "german",
    "hungarian",
    "italian",
    "norwegian",
    "portuguese",
    "russian",
    "spanish",
    "swedish",
    "turkish",
)
"""Languages whose stop words (PostgreSQL's Snowball lists, in core) a query's words are
weighed without: "Wer ist Bruno?" is about Bruno, as "Who is Bruno?" is (English stop
words never reach the query)."""

_QUESTION_WORDS = "ARRAY[" + ", ".join(f"'{word}'" for word in sorted(QUESTION_WORDS)) + "]"
_STOP_WORD = " OR ".join(
    [
        f"raw = ANY({_QUESTION_WORDS})",
        *(f"ts_lexize('{language}_stem', raw) = '{{}}'" for language in STOP_WORD_LANGUAGES),
    ]
)
"""Whether a query's word is a stop word of a language or only makes it a question
(:data:`kioku._question_words.QUESTION_WORDS`)."""
_PAIR_WEIGHT = f"CASE WHEN word ~ '^{RUN_CLASS}$' THEN 0.5 ELSE 1.0 END"
"""A character pair (or lone character) of a script written without spaces weighs half a
word: a word there is about two characters, so a question's pairs outnumber its words."""

UNACCENTED_MATCH_MIN_LETTERS = 5
"""The fewest letters of a query word for a match across accents to count at all
(:data:`UNACCENTED_MATCH_CREDIT`)."""
UNACCENTED_MATCH_CREDIT = 0.5
"""What a query word counts for when it matches a memory's word only across accents: typed
without them and held only with them (``japon``, "Japón"), or typed with them and held only
without them ("tên", "ten"). Such a word is often another language's ("hang" is Vietnamese
"hàng", "manner" German "Männer"), so it makes a query about the memory alone or with the
query's other words, not beside one it misses; shorter ones still rank the memory. Both
written with accents, in another form, the match counts fully ("irmão" finds "irmãos": their
unaccented forms stem alike)."""

_LOOSE = (
    f"CASE WHEN length(r.raw) >= {UNACCENTED_MATCH_MIN_LETTERS} "
    f"THEN {UNACCENTED_MATCH_CREDIT} ELSE 0.0 END"
)


def _kept(column: str, name: str) -> str:
    """``column`` of the query's words less stop words, unless nothing else is left."""
    return f"coalesce(array_agg({column}) FILTER (WHERE NOT stop), array_agg({column})) AS {name}"


_ASKED = (
    "asked AS MATERIALIZED (SELECT words, owners, on_written, on_unaccented, (SELECT "
    f"greatest(sum(weight), 1.0) FROM (SELECT max({_PAIR_WEIGHT}) AS weight "
    "FROM unnest(words, owners) AS o(word, n) GROUP BY n) AS per_word) AS weight FROM (SELECT "
    f"{_kept('lexeme', 'words')}, {_kept('n', 'owners')}, {_kept('written', 'on_written')}, "
    f"{_kept('plain', 'on_unaccented')} "
    f"FROM (SELECT raw, n, {_STOP_WORD} AS stop "
    "FROM regexp_split_to_table(:weighed, ' \\| ') WITH ORDINALITY AS s(raw, n) OFFSET 0) AS r, "
    f"LATERAL (VALUES (r.raw, 1.0, {_LOOSE}), "
    f"(nullif(kioku_unaccented(r.raw), r.raw), {_LOOSE}, 1.0)) AS f(form, written, plain), "
    f"unnest(tsvector_to_array(to_tsvector('{TEXT_CONFIG}', f.form))) AS lexeme) AS picked)"
)
"""The query's words as the text search sees them (stemmed; ``:weighed``, which leaves
out the question words of scripts without spaces), less any language's stop words and
question words (:data:`_STOP_WORD`, worked out once a word: ``OFFSET 0`` keeps PostgreSQL
from copying it into each aggregate's filter) unless nothing else is left: each word's
lexemes as typed and, for a word with accents, without them (``owners``: the word each
lexeme is of; ``on_written`` and ``on_unaccented``: what it counts for when a memory holds
it as written, or only as a word's unaccented form, see :data:`UNACCENTED_MATCH_CREDIT`),
and their weight in words (:data:`_PAIR_WEIGHT`): what a memory's share of the query is
counted over, worked out once per statement (a materialised ``WITH``: as a subquery it was
worked out again for each row it met)."""

_MATCHED_SHARE = (
    "CASE WHEN embedding IS NULL THEN 1.0::float8 ELSE least(1.0, (SELECT "
    "coalesce(sum(held), 0.0)::float8 FROM (SELECT max(CASE WHEN a.word = ANY(v.written) "
    "THEN a.on_written WHEN a.word = ANY(v.every) THEN a.on_unaccented ELSE 0.0 END) AS held "
    "FROM unnest(asked.words, asked.owners, asked.on_written, asked.on_unaccented) "
    "AS a(word, n, on_written, on_unaccented), "
    f"(SELECT tsvector_to_array(ts_filter(search_vector, '{EXACT_WEIGHT}')) AS written, "
    "tsvector_to_array(search_vector) AS every) AS v GROUP BY a.n) AS per_word) "
    "/ asked.weight) END"
)
"""Share of the query's words (:data:`_ASKED`) a memory holds, as written or across
accents; a memory not embedded yet (its meaning cannot be compared) counts as holding them
all."""


def _text_hits(shape: SearchShape) -> str:
    return (
        f"SELECT id, ts_rank_cd(search_vector, query) AS score, {_MATCHED_SHARE} AS matched"
        f"{_carried(shape)} "
        f"FROM memories, {TEXT_QUERY} AS query, asked "
        f"WHERE {_any_part(shape)} AND search_vector @@ query "
        "ORDER BY score DESC, id LIMIT :pool"
    )


@lru_cache(maxsize=128)
def candidates_sql(shape: SearchShape) -> str:
    """One statement returning the vector and text candidates, tagged by ``source``.

    Each row: :data:`DETAIL_COLUMNS` (or :data:`RANKING_COLUMNS`), ``score``, ``source``,
    ``matched``.
    """
    columns = DETAIL_COLUMNS if shape.details else RANKING_COLUMNS
    details = ", ".join(f"m.{column}" for column in columns)
    searches = []
    if shape.vector is not None:
        searches.append(("vector", _vector_hits(shape)))
    if shape.text:
        searches.append(("text", _text_hits(shape)))
    asked = f"WITH {_ASKED} " if shape.text else ""
    if not searches:
        return (
            f"SELECT {details}, 0.0 AS score, '' AS source, NULL::float8 AS matched "
            "FROM memories AS m WHERE false"
        )
    if not shape.details:  # the searches carry what the ranking needs: no join
        carried = ", ".join(f"hits.{column}" for column in RANKING_COLUMNS)
        return asked + " UNION ALL ".join(
            f"(SELECT {carried}, hits.score::float8 AS score, '{name}' AS source, hits.matched "
            f"FROM ({sql}) AS hits)"
            for name, sql in searches
        )
    return asked + " UNION ALL ".join(
        f"(SELECT {details}, hits.score::float8 AS score, '{name}' AS source, hits.matched "
        f"FROM ({sql}) AS hits JOIN memories AS m ON m.id = hits.id)"
        for name, sql in searches
    )


@lru_cache(maxsize=16)
def scope_size_sql(shape: SearchShape) -> str:
    """Memories in scope (any status or type): one count per scope kind, each up to ``:cap``."""
    counts = [
        f"(SELECT count(*) FROM (SELECT 1 FROM memories WHERE {owner} LIMIT :cap) AS bounded)"
        for owner in _owners(shape)
    ]
    return "SELECT " + (", ".join(counts) if counts else "WHERE false")


def search_params(
    visibility: Visibility,
    *,
    memory_type: str | None = None,
    min_importance: float | None = None,
    vector: Sequence[float] | None = None,
    terms: str | None = None,
    weighed: str | None = None,
    pool: int = 0,
    cap: int = 0,
    since: datetime | None = None,
    until: datetime | None = None,
) -> dict[str, Any]:
    """Bind parameters for the statements above (an open end of a time range: infinity).

    ``weighed``: the words a text match's share of the query is counted over
    (:data:`_ASKED`; ``None``: ``terms``).
    """
    params: dict[str, Any] = {
        "server": visibility.server_key,
        "lineage": visibility.lineage_id,
        **people_params(visibility.personal_user_ids),
        "memory_type": memory_type,
        "min_importance": min_importance,
        "terms": terms,
        "weighed": terms if weighed is None else weighed,
        "pool": pool,
        "cap": cap,
        "since": since.isoformat() if since is not None else "-infinity",
        "until": until.isoformat() if until is not None else "infinity",
    }
    if vector is not None:
        params["vector"] = _query_vector_text(tuple(vector))
    return params


@lru_cache(maxsize=16)
def _query_vector_text(vector: tuple[float, ...]) -> str:
    """The query's vector as sent: a turn ranks two blocks by the same one."""
    return halfvec_text(vector)
