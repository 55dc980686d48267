"""The plain hybrid ranking entry point: the full search pipeline, ranking only."""

from __future__ import annotations

from agent.db.scope import SearchScope
from agent.retrieval.search import SearchOptions, search
from agent.retrieval.types import RetrievedChunk
from agent.services import Services


async def hybrid_search(
    services: Services, scope: SearchScope, query: str, k: int
) -> list[RetrievedChunk]:
    """Top ``k`` visible chunks for ``query``: the full pipeline, ranking only (no threshold)."""
    return (await search(services, scope, query, SearchOptions(k=k))).chunks
