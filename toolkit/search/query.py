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

    def condition(self, memory_type: str | None = None) -> ColumnElement[bool]:
        """The SQL filter selecting exactly these memories."""
        server = and_(
            Memory.scope == "server",
            Memory.server_id == self.server_key,
            Memory.persona_lineage_id == self.lineage_id,
        )
        parts: list[ColumnElement[bool]] = [server] if self.include_server else []
        if self.personal_user_ids:
            parts.append(
                and_(
                    Memory.scope == "personal",
                    Memory.user_id.in_(self.personal_user_ids),
                    Memory.persona_lineage_id.in_([self.lineage_id, GLOBAL_LINEAGE]),
                )
            )
        if not parts:
            return false()
        condition = and_(Memory.status == "active", or_(*parts))
        if memory_type is not None:
            condition = and_(condition, Memory.memory_type == memory_type)
        return condition


def or_tsquery(text: str, terms: Sequence[str] | None = None) -> str | None:
    """``to_tsquery`` text matching any word of ``text`` (``None`` when it has none).

    Words are reduced to letters and digits, so nothing the model writes can break
    the query syntax.
    """
    words = list(dict.fromkeys(w.lower() for w in (terms or _TERM.findall(text))))[:MAX_TERMS]
    words = [w for w in words if w.replace("_", "")]
    return " | ".join(w.replace("_", "") for w in words) or None
