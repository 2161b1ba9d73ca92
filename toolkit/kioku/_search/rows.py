"""The rows a search returns: candidates as the statement gives them, hits as tools show them."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, NamedTuple, Protocol, TypeVar

from kioku._search.sql import DETAIL_COLUMNS, RANKING_COLUMNS


@dataclass(frozen=True)
class SearchHit:
    """One memory found, with why it ranked where it did."""

    id: int
    scope: str
    server_id: str | None
    user_id: str | None
    memory_type: str
    content: str
    importance: float
    relevance: float
    created_at: datetime
    score: float
    vector_rank: int | None
    text_rank: int | None
    happened_at: datetime
    """When what it records happened: its event time, else when it was saved."""

    def to_artifact(self) -> dict[str, Any]:
        """JSON-friendly record for the tool artifact."""
        record = asdict(self)
        record["created_at"] = self.created_at.isoformat()
        record["happened_at"] = self.happened_at.isoformat()
        return record


class CandidateRow(NamedTuple):
    """One candidate memory as the search statement returns it.

    ``DETAIL_COLUMNS``, then ``score`` (a distance or a text rank), ``source`` and, for
    text candidates, ``matched``: the share of the query's words the memory holds.
    """

    id: int
    scope: str
    server_id: str | None
    user_id: str | None
    memory_type: str
    content: str
    importance: float
    decay_rate: float
    created_at: datetime
    persona_lineage_id: int
    updated_at: datetime
    event_time: datetime | None
    happened_at: datetime
    """When what it records happened: its event time, else when it was saved."""
    score: float
    source: str
    matched: float | None


assert CandidateRow._fields == (*DETAIL_COLUMNS, "score", "source", "matched")


class RankedRow(NamedTuple):
    """A candidate as a ranking needs it, for callers that hold the memories themselves."""

    id: int
    importance: float
    decay_rate: float
    created_at: datetime
    happened_at: datetime
    score: float
    source: str
    matched: float | None


assert RankedRow._fields == (*RANKING_COLUMNS, "score", "source", "matched")


class Rankable(Protocol):
    """What fusion reads of a candidate (both row kinds)."""

    @property
    def id(self) -> int: ...
    @property
    def importance(self) -> float: ...
    @property
    def decay_rate(self) -> float: ...
    @property
    def created_at(self) -> datetime: ...
    @property
    def happened_at(self) -> datetime: ...
    @property
    def score(self) -> float: ...
    @property
    def source(self) -> str: ...
    @property
    def matched(self) -> float | None: ...


Row = TypeVar("Row", bound=Rankable)
