"""What retrieval returns (:class:`RetrievedChunk`), query normalization, and the plain
hybrid ranking entry point (the full pipeline lives in :mod:`agent.retrieval.search`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from agent.db.chunks import ChunkRecord
from agent.db.scope import SearchScope
from agent.retrieval.citations import format_source
from agent.services import Services


@dataclass(frozen=True)
class RetrievedChunk:
    """A child chunk found for a query, with its scores and citation id."""

    record: ChunkRecord
    citation_id: str
    score: float
    similarity: float | None
    keyword_score: float | None
    layer: str = "hybrid"

    @property
    def source(self) -> str:
        """``Title, Chapter, Section (p. N)`` for this chunk."""
        r = self.record
        return format_source(r.document_title, r.chapter_title, r.section_title, r.page)


def normalize_query(query: str) -> str:
    """Trim, collapse whitespace and strip stray leading/trailing punctuation."""
    query = " ".join(query.split())
    return re.sub(r"^[^\w\"'“(]+|[^\w\"'”)?!.]+$", "", query).strip()


async def hybrid_search(
    services: Services, scope: SearchScope, query: str, k: int
) -> list[RetrievedChunk]:
    """Top ``k`` visible chunks for ``query``: the full pipeline, ranking only (no threshold)."""
    from agent.retrieval.search import SearchOptions, search

    return (await search(services, scope, query, SearchOptions(k=k))).chunks
