"""What a store keeps between searches to make them cheaper (never to change results)."""

from __future__ import annotations

from dataclasses import dataclass, field

from kioku._search.sizes import ScopeSizes
from kioku._search.terms import TermShares


@dataclass
class SearchAids:
    """Remembered scope sizes and word statistics, shared by a store's searches."""

    sizes: ScopeSizes = field(default_factory=ScopeSizes)
    term_shares: TermShares = field(default_factory=TermShares)
