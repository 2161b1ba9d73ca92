"""Which memories a turn may search, and the text query: pure statement building."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import ColumnElement, and_, false, or_

from toolkit.db.models import Memory
from toolkit.memory.repository import GLOBAL_LINEAGE

_TERM = re.compile(r"\w+", re.UNICODE)
MAX_TERMS = 32


@dataclass(frozen=True)
class Visibility:
    """Server memories of one lineage, plus personal memories of some users (SPEC §10)."""

    server_key: str
    lineage_id: int
    personal_user_ids: tuple[str, ...] = ()
    include_server: bool = True
    """``False`` searches the personal memories only."""

    def owners(self) -> list[ColumnElement[bool]]:
        """The scope-key filters alone (no status or type), one per scope kind.

        Each is answered from a narrow scope index, which makes counting a scope cheap.
        """
        owners: list[ColumnElement[bool]] = []
        if self.include_server:
            owners.append(
                and_(
                    Memory.scope == "server",
                    Memory.server_id == self.server_key,
                    Memory.persona_lineage_id == self.lineage_id,
                )
            )
        if self.personal_user_ids:
            owners.append(
                and_(
                    Memory.scope == "personal",
                    Memory.user_id.in_(self.personal_user_ids),
                    Memory.persona_lineage_id.in_([self.lineage_id, GLOBAL_LINEAGE]),
                )
            )
        return owners

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
