"""Hybrid retrieval: pgvector dense + BM25 keyword, fused by weighted RRF, per user scope."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass

import numpy as np

from agent.db.chunks import (
    ChunkRecord,
    dense_search,
    fetch_chunks,
    fetch_embeddings,
    keyword_search,
)
from agent.db.scope import SearchScope
from agent.retrieval.citations import citation_id, format_source
from agent.retrieval.diversity import limit_per_group, mmr_order
from agent.retrieval.fusion import weighted_rrf
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
    """Top ``k`` visible chunks for ``query`` by weighted RRF of dense and BM25 rankings."""
    settings = services.settings
    query = normalize_query(query)
    if not query:
        return []
    vector = await asyncio.to_thread(services.embeddings.embedder.embed_query, query)
    n = max(settings.candidates_per_retriever, k)
    async with services.engine.connect() as conn:
        dense = await dense_search(conn, scope, vector, n)
        keyword = await keyword_search(conn, scope, query, n, settings.bm25_k1, settings.bm25_b)
        fused = weighted_rrf(
            [[h.chunk_id for h in dense], [h.chunk_id for h in keyword]],
            [settings.vector_weight, settings.keyword_weight],
            settings.rrf_k,
        )
        records = await fetch_chunks(conn, scope, [cid for cid, _ in fused])
    similarity = {h.chunk_id: h.score for h in dense}
    bm25 = {h.chunk_id: h.score for h in keyword}
    ranked = [
        RetrievedChunk(
            record=records[cid],
            citation_id=citation_id(cid),
            score=score,
            similarity=similarity.get(cid),
            keyword_score=bm25.get(cid),
        )
        for cid, score in fused
        if cid in records
    ]
    pool = limit_per_group(
        ranked,
        k * settings.mmr_pool_factor,
        settings.max_children_per_parent,
        lambda c: c.record.parent_id,
    )
    if settings.mmr_lambda >= 1 or len(pool) <= k:
        return pool[:k]
    async with services.engine.connect() as conn:
        stored = await fetch_embeddings(conn, [c.record.id for c in pool])
    pool = [c for c in pool if c.record.id in stored]
    vectors = np.array([stored[c.record.id] for c in pool], dtype=np.float32)
    order = mmr_order([c.score for c in pool], vectors, k, settings.mmr_lambda)
    return [pool[i] for i in order]
