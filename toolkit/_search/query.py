"""Which memories a turn may search, and the text query: pure statement building."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import ColumnElement, TextClause, and_, false, or_, text

from kioku._context import GLOBAL_LINEAGE
from kioku._db.models import Memory

_TERM = re.compile(r"\w+", re.UNICODE)
MAX_TERMS = 32

SERVER_OWNER_SQL = "scope = 'server' AND server_id = :server AND persona_lineage_id = :lineage"
"""Server-wide memories of one server key and lineage: the one definition of this filter
(search renders it into its statements; the expression language uses it as text)."""
PERSONAL_OWNER_SQL = (
    "scope = 'personal' AND user_id = ANY(:users) "
    f"AND persona_lineage_id IN (:lineage, {GLOBAL_LINEAGE})"
)
"""Personal memories of some users in one lineage, their global (lineage 0) ones included."""


@dataclass(frozen=True)
class Visibility:
    """Server memories of one lineage, plus personal memories of some users (SPEC §10).

    Which users and which server a turn may see is decided by :mod:`kioku._reach`.
    """

    server_key: str
    lineage_id: int
    personal_user_ids: tuple[str, ...] = ()
    include_server: bool = True
    """``False`` searches the personal memories only."""

    def kinds(self) -> tuple[str, ...]:
        """The scope kinds covered (``server``, ``personal``), in the order of the filters."""
        return (("server",) if self.include_server else ()) + (
            ("personal",) if self.personal_user_ids else ()
        )

    def owners_sql(self) -> list[str]:
        """The scope-key filters as SQL text with named parameters, one per scope kind."""
        return [
            SERVER_OWNER_SQL if kind == "server" else PERSONAL_OWNER_SQL for kind in self.kinds()
        ]

    def owners(self) -> list[TextClause]:
        """The scope-key filters alone (no status or type), one per scope kind, bound.

        Each is answered from a narrow scope index, which makes counting a scope cheap.
        For statements over ``memories`` alone (the columns are unqualified), one
        ``Visibility`` per statement (the parameter names are fixed).
        """
        values = {
            "server": self.server_key,
            "lineage": self.lineage_id,
            "users": list(self.personal_user_ids),
        }
        return [
            text(sql).bindparams(**{k: v for k, v in values.items() if f":{k}" in sql})
            for sql in self.owners_sql()
        ]

    def parts(self, memory_type: str | None = None) -> list[ColumnElement[bool]]:
        """The full filter split by scope kind (server, personal).

        Querying the parts separately (``UNION ALL``) lets PostgreSQL answer each from
        its covering index; an ``OR`` of them would fall back to heap scans.
        """
        extra = [Memory.status == "active"]
        if memory_type is not None:
            extra.append(Memory.memory_type == memory_type)
        return [and_(owner, *extra) for owner in self.owners()]

    def condition(self, memory_type: str | None = None) -> ColumnElement[bool]:
        """The SQL filter selecting exactly these memories."""
        parts = self.parts(memory_type)
        return or_(*parts) if parts else false()


def query_words(text: str) -> list[str]:
    """The distinct words of ``text``, lower-cased, in order (at most ``MAX_TERMS``)."""
    return list(dict.fromkeys(w.lower() for w in _TERM.findall(text)))[:MAX_TERMS]


def or_tsquery(text: str, terms: Sequence[str] | None = None) -> str | None:
    """``to_tsquery`` text matching any word of ``text`` (``None`` when it has none).

    Words are reduced to letters and digits, so nothing the model writes can break
    the query syntax.
    """
    words = query_words(text if terms is None else " ".join(terms))
    words = [w for w in words if w.replace("_", "")]
    return " | ".join(w.replace("_", "") for w in words) or None
