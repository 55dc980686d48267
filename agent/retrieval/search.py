"""The retrieval pipeline: every search in Quire goes through :func:`search`.

    question -> normalize -> [expand: intent + rewrites, <= 4 queries]
             -> per query: pgvector dense + BM25 keyword (concurrently, within the timeout)
             -> weighted RRF across all lists -> time decay -> transcript tag boost
             -> documents before transcripts on near-ties
             -> threshold + fallback layers (seed 000) -> one child per parent -> MMR
             -> [LLM rerank] -> top k
             (both sides of a detected conflict survive MMR and the top k: conflicts.py)

Fallback layers, tried in order until one yields chunks: ``hybrid`` (fused ranking,
similarity >= threshold), ``vector`` (dense ranking, same threshold: used when the keyword
side failed), ``low_threshold`` (similarity >= 0.3), ``keyword`` (a hit holding most of the
question's words: :mod:`~agent.retrieval.held_words`), ``sentence`` (one of the fused best
holds a sentence near the question: :mod:`~agent.retrieval.sentence_match`),
``question_words`` (no chunk is near, but the documents hold the question's words and every
name it uses: the fused ranking; :class:`~agent.retrieval.held_words.QuestionWords`),
``any_embedded`` (nearest chunks, no threshold), ``any_chunk`` (any visible chunk, embedded
or not), else ``none``. Every chunk says which layer produced it, and so do the metrics kept
with the answer.

This module runs the stages in order; each lives in its own module: candidates
(:mod:`~agent.retrieval.candidates`), ranking (:mod:`~agent.retrieval.ranking`), the
connections they read on (:mod:`~agent.retrieval.reads`) and the cache
(:mod:`~agent.retrieval.cache`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache

import numpy as np
from langchain_core.language_models import BaseChatModel

from agent.config import Settings
from agent.db.chunks import with_parent_texts
from agent.db.postings import LibraryState
from agent.db.scope import SearchScope
from agent.models import EmbedderUnavailable
from agent.retrieval.cache import cache_get, cache_key, cache_put, clear_search_cache, in_cache
from agent.retrieval.candidates import (
    Found,
    dense_read,
    expand_queries,
    keyword_rankings,
    read_library_state,
    retrieve,
)
from agent.retrieval.clock import SearchClock
from agent.retrieval.conflicts import Conflict, keep_both_sides
from agent.retrieval.query_vectors import discard, embed_soon
from agent.retrieval.ranking import rank, rerank_in_time
from agent.retrieval.reads import Reads
from agent.retrieval.types import (
    Layer,
    RetrievalMetrics,
    RetrievedChunk,
    SearchMode,
    SearchOptions,
    SearchResult,
    normalize_query,
)
from agent.services import Services

# keyword_rankings is re-exported for callers; it is looked up (and monkeypatched) in
# agent.retrieval.candidates.
__all__ = [
    "SearchMode",
    "SearchOptions",
    "SearchResult",
    "clear_search_cache",
    "embed_question",
    "forget_question_vectors",
    "keyword_rankings",
    "search",
]

logger = logging.getLogger(__name__)


async def search(
    services: Services,
    scope: SearchScope,
    question: str,
    options: SearchOptions | None = None,
    *,
    model: BaseChatModel | None = None,
    query_vector: Sequence[float] | None = None,
) -> SearchResult:
    """Run the pipeline for ``question`` in ``scope``; ``model`` serves expansion and rerank.

    ``query_vector``: the question already embedded by ``services.embeddings`` (another part
    of the turn embedded it), so it is not embedded again.
    """
    options = options or SearchOptions()
    settings = services.settings
    metrics = RetrievalMetrics(query_type=options.query_type, threshold=options.threshold)
    clock = SearchClock(settings.retrieval_timeout_seconds, metrics)
    query = normalize_query(question)
    if not query:
        clock.total()
        return SearchResult([], "none", metrics)

    # The question is embedded in a thread while the library state (fingerprint and query
    # lexemes), the cache check and the keyword side go on.
    embedding = None
    if options.mode != "bm25":
        embedding = embed_soon(services, [query], given=query_vector)
    try:
        async with Reads(services.read_pool) as reads:
            return await _search(services, scope, query, options, model, clock, embedding, reads)
    finally:
        if embedding is not None:
            embedding.add_done_callback(discard)


async def embed_question(services: Services, question: str) -> list[float] | None:
    """``question`` embedded as :func:`search` embeds it, for a turn whose other parts
    (routing, earlier discussions) compare against the same vector (embedded once, then
    kept for a while); ``None`` if it cannot be embedded (each part then degrades on its
    own)."""
    query = normalize_query(question)
    if not query:
        return None
    try:
        return list(await asyncio.to_thread(_embedded, services.embeddings.embedder, query))
    except Exception as exc:
        logger.warning("the question could not be embedded: %s", exc)
        return None


@lru_cache(maxsize=64)
def _embedded(embedder, query: str) -> tuple[float, ...]:
    """``query`` embedded by ``embedder``, kept for the turn's next reader of it (the
    router reads a message's meaning with the vector retrieval then searches with)."""
    return tuple(embedder.embed_query(query))


def forget_question_vectors() -> None:
    """Drop the kept question vectors (:func:`embed_question`): each is embedded anew."""
    _embedded.cache_clear()


async def _search(
    services: Services,
    scope: SearchScope,
    query: str,
    options: SearchOptions,
    model: BaseChatModel | None,
    clock: SearchClock,
    embedding: asyncio.Future | None,
    reads: Reads,
) -> SearchResult:
    """:func:`search` once the question is normalized and its embedding started."""
    settings = services.settings
    n = max(settings.candidates_per_retriever, options.k)
    key = cache_key(scope, query, options, settings.search_cache_ttl_seconds)
    # Given the question's vector, the dense read need not wait for the library state: it
    # starts now, on its own connection, unless a cached result may answer (then the state
    # read goes alone, so that a hit stays one round trip).
    early = None
    if embedding is not None and embedding.done() and not (key and in_cache(key)):
        early = reads.start(dense_read(reads, scope, embedding, n))
        await asyncio.sleep(0)  # sent before the state read
    state = None
    if options.mode != "dense" or key is not None:
        lexed = [query] if options.mode != "dense" else []
        state = await read_library_state(reads, scope, lexed)
        clock.lap("state")
    if key is not None and (hit := _cache_hit(key, state, clock)) is not None:
        return hit

    if (options.expand or options.rerank) and model is None:
        from agent.models import achat_model

        model = await achat_model(settings.chat_model, settings, 0.0)
    queries, embedding, state = await _queries(
        services, scope, query, options, model, clock, embedding, state, reads
    )
    found = await retrieve(
        services, scope, queries, state, embedding, n, options.mode, clock, reads, early
    )
    options = _after_embedding(found, options, clock.metrics)
    embed = services.embeddings.embedder.embed_documents
    layer, chunks = await rank(found, queries, query, options, settings, clock, reads, scope, embed)
    if options.rerank and model is not None and len(chunks) > 1 and clock.left() > 0:
        chunks = await rerank_in_time(model, query, chunks, settings, clock)

    conflicts: list[Conflict] = []
    if options.keep_conflicts:  # the top k keeps both sides of each disagreement
        top, conflicts = keep_both_sides(chunks[: options.k], chunks, options.k, _passage)
    else:
        top = chunks[: options.k]
    chunks = await _with_parents(reads, top)
    result = _finish(chunks, layer, clock, conflicts)
    if key is not None and not clock.metrics.timed_out and not clock.metrics.failures:
        _remember(key, state, result, settings)
    return result


def _cache_hit(key: tuple, state: LibraryState, clock: SearchClock) -> SearchResult | None:
    """The cached result for ``key`` with this search's timings, if the cache has it."""
    cached = cache_get(key, state.fingerprint)
    if cached is None:
        return None
    metrics = clock.metrics
    hit = replace(cached.metrics, cache_hit=True, stages_ms=dict(metrics.stages_ms))
    clock.total()
    hit.stages_ms["total"] = metrics.stages_ms["total"]
    return SearchResult(cached.chunks, cached.layer, hit, cached.conflicts)


def _remember(key: tuple, state: LibraryState, result: SearchResult, settings: Settings) -> None:
    """Cache ``result`` under ``key`` for the library as ``state`` found it."""
    cache_put(
        key,
        state.fingerprint,
        result,
        settings.search_cache_ttl_seconds,
        settings.search_cache_size,
    )


async def _queries(
    services: Services,
    scope: SearchScope,
    query: str,
    options: SearchOptions,
    model: BaseChatModel | None,
    clock: SearchClock,
    embedding: asyncio.Future | None,
    state: LibraryState | None,
    reads: Reads,
) -> tuple[list[str], asyncio.Future | None, LibraryState | None]:
    """The queries to search, with their embedding and library state: the question alone,
    or (expanded) it and its rewrites, embedded after it and lexed again."""
    queries = [query]
    if options.expand and model is not None:
        queries = await expand_queries(model, query, services.settings, clock)
        if len(queries) > 1:
            if embedding is not None:
                embedding = embed_soon(services, queries[1:], first=embedding)
            if options.mode != "dense":
                state = await read_library_state(reads, scope, queries)
    clock.metrics.queries = queries
    return queries, embedding, state


def _after_embedding(
    found: Found, options: SearchOptions, metrics: RetrievalMetrics
) -> SearchOptions:
    """``options`` as ranking should apply them: keyword-only if the question could not be
    embedded (a dense-only search cannot run then)."""
    if not found.embed_failed:
        return options
    if options.mode == "dense":
        raise EmbedderUnavailable(
            "The embedding model is not available, so semantic search cannot run."
        ) from found.embed_failed
    # hybrid goes on with its keyword half (not cached: the failure is recorded)
    logger.warning("query embedding failed, keyword search only: %s", found.embed_failed)
    metrics.failures.append(f"embed: {type(found.embed_failed).__name__}")
    return replace(options, mode="bm25")


async def _with_parents(reads: Reads, chunks: list[RetrievedChunk]) -> list[RetrievedChunk]:
    """The chosen chunks with their parents' text (candidates are read without it)."""
    if all(c.record.parent_text is not None or c.record.parent_id is None for c in chunks):
        return chunks
    records = await reads.read(lambda conn: with_parent_texts(conn, [c.record for c in chunks]))
    return [replace(c, record=r) for c, r in zip(chunks, records, strict=True)]


def _passage(chunk: RetrievedChunk):
    return chunk.passage


def _finish(
    chunks: list[RetrievedChunk],
    layer: Layer,
    clock: SearchClock,
    conflicts: list[Conflict] | None = None,
) -> SearchResult:
    """The result, its metrics completed (layer, count, average similarity, total time)."""
    metrics = clock.metrics
    metrics.layer = layer
    metrics.results = len(chunks)
    sims = [c.similarity for c in chunks if c.similarity is not None]
    metrics.average_similarity = round(float(np.mean(sims)), 4) if sims else None
    clock.total()
    return SearchResult(chunks, layer, metrics, conflicts or [])
