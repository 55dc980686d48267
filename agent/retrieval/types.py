"""What retrieval returns: a :class:`RetrievedChunk` (one child chunk, its scores and citation
id) and its JSON shape, and the query normalization every search applies first."""

from __future__ import annotations

import re
from dataclasses import dataclass

from agent.db.chunks import ChunkRecord
from agent.retrieval.citations import format_source


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


def chunk_payload(
    chunk: RetrievedChunk, preview_chars: int = 200, context_text: str | None = None
) -> dict:
    """The JSON shape of a retrieved chunk; citations are these for the cited chunks.

    ``context_text`` is what the model saw under the chunk's id (used to check support).
    """
    r = chunk.record
    return {
        "id": chunk.citation_id,
        "chunk_id": str(r.id),
        "document_id": str(r.document_id),
        "document": r.document_title,
        "chapter": r.chapter_title,
        "section": r.section_title,
        "page": r.page,
        "text": r.text,
        "preview": r.text[:preview_chars],
        "source": chunk.source,
        "score": chunk.score,
        "similarity": chunk.similarity,
        "keyword_score": chunk.keyword_score,
        "layer": chunk.layer,
        "context_text": context_text or r.text,
    }
