"""Which memories a turn may search, and the text query: pure statement building."""

from __future__ import annotations

import re
from collections.abc import Sequence

from sqlalchemy import ColumnElement, TextClause, and_, false, or_, text

from kioku._context import GLOBAL_LINEAGE
from kioku._db.models import Memory
from kioku._domain.visibility import Visibility
from kioku._question_words import without_paired_heads
from kioku._spaceless import terms, terms_asked

_TERM = re.compile(r"\w+", re.UNICODE)
MAX_TERMS = 32

SERVER_OWNER_SQL = "scope = 'server' AND server_id = :server AND persona_lineage_id = :lineage"
"""Server-wide memories of one server key and lineage: the one definition of this filter
(search renders it into its statements; the expression language uses it as text)."""


def people_slots(people: int) -> int:
    """How many ``:user_N`` parameters a filter of ``people`` people's memories holds.

    The statement lists each person (``IN (:user_0, :user_1, …)``) rather than taking one
    array: PostgreSQL then knows how many there are when it plans for any values (a
    generic plan, kept for a prepared statement) and, estimating as it does for given
    values, keeps that plan instead of planning every search again. Counts are rounded
    up to a power of two (the last person repeated) so that few statements exist.
    """
    if people < 1:
        raise ValueError("a filter of people's memories needs at least one person")
    return 1 << (people - 1).bit_length()


def personal_owner_sql(people: int) -> str:
    """Personal memories of ``people`` users in one lineage, their global ones included.

    The one definition of this filter; global memories are those of lineage 0.
    """
    users = ", ".join(f":user_{index}" for index in range(people_slots(people)))
    return (
        f"scope = 'personal' AND user_id IN ({users}) "
        f"AND persona_lineage_id IN (:lineage, {GLOBAL_LINEAGE})"
    )


def people_params(user_ids: Sequence[str]) -> dict[str, str]:
    """The ``:user_N`` parameters of :func:`personal_owner_sql` for ``user_ids``."""
    if not user_ids:
        return {}
    slots = people_slots(len(user_ids))
    return {f"user_{index}": user_ids[min(index, len(user_ids) - 1)] for index in range(slots)}


def owners_sql(visibility: Visibility) -> list[str]:
    """The scope-key filters as SQL text with named parameters, one per scope kind."""
    people = len(visibility.personal_user_ids)
    return [
        SERVER_OWNER_SQL if kind == "server" else personal_owner_sql(people)
        for kind in visibility.kinds()
    ]


def owner_filters(visibility: Visibility) -> list[TextClause]:
    """The scope-key filters alone (no status or type), one per scope kind, bound.

    Each is answered from a narrow scope index, which makes counting a scope cheap.
    For statements over ``memories`` alone (the columns are unqualified), one
    ``Visibility`` per statement (the parameter names are fixed).
    """
    values = {
        "server": visibility.server_key,
        "lineage": visibility.lineage_id,
        **people_params(visibility.personal_user_ids),
    }
    return [
        text(sql).bindparams(**{k: v for k, v in values.items() if re.search(rf":{k}\b", sql)})
        for sql in owners_sql(visibility)
    ]


def scope_parts(
    visibility: Visibility, memory_type: str | None = None
) -> list[ColumnElement[bool]]:
    """The full filter split by scope kind (server, personal).

    Querying the parts separately (``UNION ALL``) lets PostgreSQL answer each from
    its covering index; an ``OR`` of them would fall back to heap scans.
    """
    extra = [Memory.status == "active"]
    if memory_type is not None:
        extra.append(Memory.memory_type == memory_type)
    return [and_(owner, *extra) for owner in owner_filters(visibility)]


def scope_condition(visibility: Visibility, memory_type: str | None = None) -> ColumnElement[bool]:
    """The SQL filter selecting exactly ``visibility``'s memories."""
    parts = scope_parts(visibility, memory_type)
    return or_(*parts) if parts else false()


def query_words(text: str) -> list[str]:
    """The distinct words of ``text``, lower-cased, in order (at most ``MAX_TERMS``).

    Runs of scripts written without spaces count as their character pairs
    (:mod:`kioku._spaceless`), as the database indexes them.
    """
    return _distinct(terms(text, _TERM.findall))


def asked_words(text: str) -> list[str]:
    """:func:`query_words` less the words that only make ``text`` a question.

    What a memory's share of a query is counted over (the relevance floor): in scripts
    written without spaces such words are cut out of the runs
    (:func:`kioku._spaceless.terms_asked`), as English stop words never reach a query;
    the other question words are the statement's stop words
    (:mod:`kioku._question_words`), but for a word asking only before another ("bao").
    """
    found = [word.lower() for word in terms_asked(text, _TERM.findall)]
    return _distinct(without_paired_heads(found))


def _distinct(found: Sequence[str]) -> list[str]:
    """``found`` lower-cased, each once, in order; at most ``MAX_TERMS``."""
    return list(dict.fromkeys(w.lower() for w in found))[:MAX_TERMS]


def or_tsquery(text: str, terms: Sequence[str] | None = None) -> str | None:
    """``to_tsquery`` text matching any word of ``text`` (``None`` when it has none).

    Words are reduced to letters and digits, so nothing the model writes can break
    the query syntax.
    """
    words = query_words(text if terms is None else " ".join(terms))
    words = [w for w in words if w.replace("_", "")]
    return " | ".join(w.replace("_", "") for w in words) or None
