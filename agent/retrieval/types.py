"""What a search takes and returns: its :class:`SearchOptions`, a :class:`RetrievedChunk`
(one child chunk, its scores and citation id) and its JSON shape, the
:class:`RetrievalMetrics` and :class:`SearchResult`, and the query normalization every search
applies first."""

from __future__ import annotations

import re
import uuid
from dataclasses import asdict, dataclass, field
from typing import Literal

from agent.db.chunks import ChunkRecord
from agent.retrieval.citations import format_source
from agent.retrieval.conflicts import Conflict, Passage

SearchMode = Literal["hybrid", "dense", "bm25"]
Layer = Literal[
    "hybrid",
    "vector",
    "keyword",
    "low_threshold",
    "sentence",
    "question_words",
    "any_embedded",
    "any_chunk",
    "none",
]
BELOW_RELEVANCE: tuple[Layer, ...] = ("any_embedded", "any_chunk", "none")
"""Fallback layers whose chunks are no evidence (nearest anything, any chunk, nothing)."""


@dataclass(frozen=True)
class SearchOptions:
    """How to search. ``threshold=None`` ranks only (no similarity floor, no fallbacks)."""

    k: int = 5
    mode: SearchMode = "hybrid"
    threshold: float | None = None
    expand: bool = False
    rerank: bool = False
    diversify: bool = True
    query_type: str = "specific"
    use_cache: bool = True
    keep_conflicts: bool = True
    """Keep both sides of each detected conflict (:mod:`~agent.retrieval.conflicts`) through
    diversity and the top ``k``."""
    admitted_floor: float | None = None
    """With a ``threshold``: once a chunk clears it, the fused ranking fills the results down
    to this similarity (``None``: the threshold filters every chunk)."""
    fill_to: int | None = None
    """With ``admitted_floor``: fill only while fewer than this many chunks clear the
    threshold, up to this many (``None``: every chunk down to the floor)."""
    skip_passages: frozenset[uuid.UUID] = frozenset()
    """Passages already shown (a parent chunk's id, or a chunk's own when it has none): the
    children of each are left out (a wider search after the first passages did not say it)."""


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

    @property
    def passage(self) -> Passage:
        """This chunk as the conflict detector reads it."""
        r = self.record
        return Passage(self.citation_id, str(r.document_id), r.text, self.source)


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


@dataclass
class RetrievalMetrics:
    """What one retrieval did and how long each stage took (seed 001)."""

    query_type: str
    queries: list[str] = field(default_factory=list)
    intent: str | None = None
    layer: Layer = "none"
    threshold: float | None = None
    candidates: int = 0
    results: int = 0
    average_similarity: float | None = None
    sentence_similarity: float | None = None
    """The best sentence's cosine when no chunk was similar enough (see ``sentence_match``)."""
    known_names: list[str] = field(default_factory=list)
    """When no chunk is near the question: its names the documents use (``held_words``)."""
    reranked: bool = False
    cache_hit: bool = False
    timed_out: bool = False
    failures: list[str] = field(default_factory=list)
    stages_ms: dict[str, float] = field(default_factory=dict)
    context_chars: int = 0

    def as_dict(self) -> dict:
        """JSON-ready form (stored with the assistant message)."""
        return asdict(self)


@dataclass(frozen=True)
class SearchResult:
    """The chunks found, the layer that found them, and the metrics."""

    chunks: list[RetrievedChunk]
    layer: Layer
    metrics: RetrievalMetrics
    conflicts: list[Conflict] = field(default_factory=list)
    """Pairs of the chunks that disagree (both sides are always among ``chunks``)."""
