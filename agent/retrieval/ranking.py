"""Ranking the candidates: adaptive score fusion (or weighted RRF) across every list, time
decay and tag boost, tables of contents left out, documents before transcripts on near-ties,
the threshold and its fallback layers (seed 000), one child per parent and MMR, then the
optional LLM rerank."""

from __future__ import annotations

import asyncio
import uuid

import numpy as np
from langchain_core.language_models import BaseChatModel

from agent.config import Settings
from agent.db.chunks import ChunkRecord, ScoredChunkId, any_chunks, fetch_chunks
from agent.db.scope import SearchScope
from agent.retrieval.boosts import prefer_authoritative, tag_boost, time_decay, utcnow
from agent.retrieval.candidates import Found
from agent.retrieval.citations import citation_id
from agent.retrieval.clock import SearchClock
from agent.retrieval.conflicts import keep_both_sides
from agent.retrieval.diversity import limit_per_group, mmr_order
from agent.retrieval.fusion import adaptive_fusion, weighted_rrf
from agent.retrieval.held_words import question_words, with_held_words
from agent.retrieval.listings import asks_about_contents, is_listing
from agent.retrieval.query_vectors import unit
from agent.retrieval.reads import Reads
from agent.retrieval.rerank import llm_scores, rerank_order, with_title
from agent.retrieval.sentence_match import Embed, sentence_matches
from agent.retrieval.types import Layer, RetrievedChunk, SearchMode, SearchOptions

Scored = list[tuple[uuid.UUID, float]]
"""Chunk ids with their scores, best first."""


# --- scores -----------------------------------------------------------------------------------


def fuse(
    dense_lists: list[list[ScoredChunkId]],
    keyword_lists: list[list[ScoredChunkId]],
    mode: SearchMode,
    settings: Settings,
) -> Scored:
    """Every dense and keyword ranking fused: adaptive score fusion (``fusion``), else
    weighted RRF (equal weights unless hybrid)."""
    if settings.fusion == "adaptive":
        vector, keyword = (
            (settings.vector_weight, settings.keyword_weight) if mode == "hybrid" else (1.0, 1.0)
        )
        return adaptive_fusion(
            [
                (vector, [[(h.chunk_id, h.score) for h in lst] for lst in dense_lists]),
                (keyword, [[(h.chunk_id, h.score) for h in lst] for lst in keyword_lists]),
            ],
            settings.fusion_drop_depth,
            settings.fusion_min_share,
            full_length=settings.candidates_per_retriever,
        )
    lists: list[list[uuid.UUID]] = []
    weights: list[float] = []
    for ranking in dense_lists:
        lists.append([h.chunk_id for h in ranking])
        weights.append(settings.vector_weight if mode == "hybrid" else 1.0)
    for ranking in keyword_lists:
        lists.append([h.chunk_id for h in ranking])
        weights.append(settings.keyword_weight if mode == "hybrid" else 1.0)
    return weighted_rrf(lists, weights, settings.rrf_k)


def similarities(
    stored: dict[uuid.UUID, list[float]], vectors: list[np.ndarray]
) -> dict[uuid.UUID, float]:
    """Cosine similarity of each candidate to the closest of the queries."""
    if not stored or not vectors:
        return {}
    ids = list(stored)
    matrix = np.array([stored[i] for i in ids], dtype=np.float32)
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    sims = (matrix @ np.stack(vectors).T).max(axis=1)
    return {cid: float(s) for cid, s in zip(ids, sims, strict=True)}


def passage_of(record: ChunkRecord) -> uuid.UUID:
    """The passage a chunk is shown in: its parent, else itself."""
    return record.parent_id or record.id


def adjust(
    fused: Scored,
    records: dict[uuid.UUID, ChunkRecord],
    query: str,
    settings: Settings,
    skip_passages: frozenset[uuid.UUID] = frozenset(),
) -> Scored:
    """Time decay and tag boost on fused scores, listings left out (``skip_listings``) and
    the children of ``skip_passages``, then documents before transcripts on ties."""
    now = utcnow()
    half_life = settings.time_decay_half_life_days
    skip_listings = settings.skip_listings and not asks_about_contents(query)
    scored: Scored = []
    for cid, score in fused:
        record = records.get(cid)
        if record is None or (skip_listings and is_listing(record.text)):
            continue  # not visible (or deleted meanwhile), or a table of contents
        if skip_passages and passage_of(record) in skip_passages:
            continue  # shown already
        if half_life:
            score *= time_decay(
                record.document_created_at, half_life, settings.time_decay_floor, now
            )
        if record.file_type == "transcript" and record.tags:
            score *= tag_boost(query, record.tags, settings.tag_boost_factor)
        scored.append((cid, score))
    return prefer_authoritative(
        scored,
        score=lambda item: item[1],
        is_transcript=lambda item: records[item[0]].file_type == "transcript",
        ratio=settings.authority_tie_ratio,
    )


def best_keyword_scores(keyword_lists: list[list[ScoredChunkId]]) -> dict[uuid.UUID, float]:
    """Each chunk's best BM25 score over the queries."""
    best: dict[uuid.UUID, float] = {}
    for ranking in keyword_lists:
        for hit in ranking:
            best[hit.chunk_id] = max(best.get(hit.chunk_id, 0.0), hit.score)
    return best


# --- threshold and fallback layers ------------------------------------------------------------


def apply_layers(
    scored: Scored,
    similarity: dict[uuid.UUID, float],
    dense_lists: list[list[ScoredChunkId]],
    options: SearchOptions,
    low_threshold: float,
    keyword_failed: bool,
) -> tuple[Layer, Scored]:
    """The first fallback layer (seed 000) that yields chunks, with those chunks.

    With ``options.admitted_floor`` the threshold admits the question, as seeds 002-003 gate
    RAG on the best hit's score: once a chunk clears it, the fused ranking fills the layer
    down to that floor. The small embedder's cosines sit close together (0.5-0.75), and as
    a filter the threshold can drop the fused best at 0.69 for lesser chunks at 0.70.
    Measured on 107 answerable questions with the local model's context: the answer in it
    82 times as a filter, 91 filled down to 0.5 (0.3: 89, 0.6: 88; as many chunks as clear
    the threshold, from the fused ranking: 89), for ~100 more prompt tokens a turn and
    ~200 more on a follow-up (new passages, not the cached ones: 1.1 -> 3.7 s to the first
    token on 2 cores). So every model fills, but the local model keeps to the threshold
    on Path C and on a follow-up that continues its chat's exchange
    (``agent.chat.retrieval_step.search_options``); on Path C it fills only up to
    ``options.fill_to`` chunks, when fewer clear the threshold."""
    first: Layer = {"hybrid": "hybrid", "dense": "vector", "bm25": "keyword"}[options.mode]
    if options.threshold is None:
        return (first if scored else "none"), scored
    visible = {cid for cid, _ in scored}
    by_similarity = sorted(
        ((cid, similarity[cid]) for cid in visible if cid in similarity), key=lambda x: -x[1]
    )
    threshold = options.threshold
    if options.mode == "bm25":  # similarity does not apply to keyword-only search
        return ("keyword" if scored else "any_chunk"), scored
    floor = threshold if options.admitted_floor is None else min(threshold, options.admitted_floor)

    def admitted(ranked: Scored) -> Scored:
        above = [(c, s) for c, s in ranked if similarity.get(c, -1.0) >= threshold]
        if not above:
            return []
        filled = [(c, s) for c, s in ranked if similarity.get(c, -1.0) >= floor]
        if options.fill_to is None:
            return filled
        below = [c for c, _ in filled if similarity.get(c, -1.0) < threshold]
        kept = {c for c, _ in above} | set(below[: max(options.fill_to - len(above), 0)])
        return [(c, s) for c, s in filled if c in kept]

    layers: list[tuple[Layer, Scored]] = []
    if not keyword_failed:
        layers.append((first, admitted(scored)))
    layers.append(("vector", admitted(by_similarity)))
    ranked = by_similarity if keyword_failed else scored
    layers.append(
        ("low_threshold", [(c, s) for c, s in ranked if similarity.get(c, -1.0) >= low_threshold])
    )
    nearest = {h.chunk_id for ranking in dense_lists for h in ranking}
    layers.append(("any_embedded", [(c, s) for c, s in by_similarity if c in nearest]))
    for layer, chunks in layers:
        if chunks:
            return layer, chunks
    return "any_chunk", []


async def last_resort(
    reads: Reads, scope: SearchScope, keyword_lists: list[list[ScoredChunkId]], k: int
) -> tuple[Layer, Scored, dict[uuid.UUID, ChunkRecord]]:
    """Layer 5: any visible chunk (keyword hits first, then reading order), or nothing."""
    ids = list(dict.fromkeys(h.chunk_id for ranking in keyword_lists for h in ranking))

    async def read(conn):
        found = ids + [cid for cid in await any_chunks(conn, scope, k) if cid not in ids]
        return found[:k], await fetch_chunks(conn, scope, found[:k])

    ids, records = await reads.read(read)
    picked = [(cid, 0.0) for cid in ids[:k] if cid in records]
    return ("any_chunk" if picked else "none"), picked, records


# --- diversity --------------------------------------------------------------------------------


def diversify(
    chunks: list[RetrievedChunk], stored: dict[uuid.UUID, list[float]], k: int, settings: Settings
) -> list[RetrievedChunk]:
    """At most ``max_children_per_parent`` per parent, then MMR over the embedded pool."""
    pool = limit_per_group(
        chunks,
        k * settings.mmr_pool_factor,
        settings.max_children_per_parent,
        lambda c: c.record.parent_id,
    )
    embedded = [c for c in pool if c.record.id in stored]
    if settings.mmr_lambda >= 1 or len(embedded) <= k or len(embedded) < len(pool):
        return pool[:k]
    vectors = np.array([unit(stored[c.record.id]) for c in embedded], dtype=np.float32)
    order = mmr_order([c.score for c in embedded], vectors, k, settings.mmr_lambda)
    return [embedded[i] for i in order]


def _chosen(
    picked: Scored,
    layer: Layer,
    found: Found,
    similarity: dict[uuid.UUID, float],
    want: int,
    options: SearchOptions,
    settings: Settings,
) -> list[RetrievedChunk]:
    """The best ``want`` of the layer's chunks, one child per parent and MMR if diversified."""
    records = found.records
    if options.diversify:  # only the MMR pool can be chosen: build just those
        picked = limit_per_group(
            picked,
            want * settings.mmr_pool_factor,
            settings.max_children_per_parent,
            lambda item: records[item[0]].parent_id,
        )
    else:
        picked = picked[:want]
    chunks = _as_chunks(picked, layer, found, similarity)
    if options.diversify:
        return diversify(chunks, found.stored, want, settings)
    return chunks[:want]


def _as_chunks(
    items: Scored, layer: Layer, found: Found, similarity: dict[uuid.UUID, float]
) -> list[RetrievedChunk]:
    """Scored candidates as retrieved chunks (with their similarity and best BM25 score)."""
    keyword_scores = best_keyword_scores(found.keyword)
    return [
        RetrievedChunk(
            record=found.records[cid],
            citation_id=citation_id(cid),
            score=score,
            similarity=similarity.get(cid),
            keyword_score=keyword_scores.get(cid),
            layer=layer,
        )
        for cid, score in items
        if cid in found.records
    ]


def _with_partners(
    chosen: list[RetrievedChunk],
    candidates: Scored,
    layer: Layer,
    found: Found,
    similarity: dict[uuid.UUID, float],
    want: int,
) -> list[RetrievedChunk]:
    """``chosen`` with the other side of each conflict one of them is in, looked for among
    ``candidates`` (a partner states the same thing, so it ranks close; it may fall just
    under the threshold: "does not run" against "runs"), the rest trimmed from the lowest
    ranked."""
    have = {c.record.id for c in chosen}
    near: dict[uuid.UUID, float] = {}
    for cid, score in candidates:
        if cid not in have:
            near.setdefault(cid, score)
    pool = _as_chunks(list(near.items()), layer, found, similarity)
    return keep_both_sides(chosen, pool, want, lambda c: c.passage)[0]


async def rank(
    found: Found,
    queries: list[str],
    query: str,
    options: SearchOptions,
    settings: Settings,
    clock: SearchClock,
    reads: Reads,
    scope: SearchScope,
    embed: Embed | None = None,
) -> tuple[Layer, list[RetrievedChunk]]:
    """The candidates fused, adjusted, through the fallback layers and diversified: the
    layer that yielded them and as many chunks as the rerank (or else ``k``) needs.
    ``embed`` (documents' texts to vectors) lets a chunk far from the question count when
    one of its sentences is near it (:mod:`~agent.retrieval.sentence_match`)."""
    keyword_failed = options.mode == "hybrid" and len(found.keyword) < len(queries)
    fused = fuse(found.dense, found.keyword, options.mode, settings)
    clock.lap("fuse")

    similarity = similarities(found.stored, found.vectors)
    scored = adjust(fused, found.records, query, settings, options.skip_passages)
    clock.metrics.candidates = len(scored)
    layer, picked = apply_layers(
        scored, similarity, found.dense, options, settings.threshold_fallback, keyword_failed
    )
    if options.mode == "hybrid":  # nothing or little is similar; a chunk may hold its words
        layer, picked = await with_held_words(reads, scope, query, found, scored, layer, picked)
    if layer == "any_embedded" and options.mode == "hybrid" and embed and found.vectors:
        matched, best = await sentence_matches(
            embed,
            found.vectors,
            scored,
            found.records,
            threshold=settings.threshold_sentence,
            window=settings.parent_context_chars,
            reads=reads,
        )
        clock.metrics.sentence_similarity = best
        if matched:
            layer, picked = "sentence", matched
    if layer == "any_embedded" and options.mode == "hybrid":  # their words, after all?
        words = await question_words(
            reads, scope, query, found, max(similarity.values(), default=0.0)
        )
        clock.metrics.known_names = list(words.known_names)
        if words.about_the_documents:
            layer, picked = "question_words", scored
    if layer == "any_chunk":
        layer, picked, extra = await last_resort(reads, scope, found.keyword, options.k)
        found.records.update(extra)
    clock.lap("layers")

    want = max(options.k, settings.rerank_candidates if options.rerank else 0)
    chunks = _chosen(picked, layer, found, similarity, want, options, settings)
    if options.keep_conflicts:  # diversity and the threshold must not drop one side
        near = picked[: 2 * want] + scored[: 2 * want]  # the layer's best, then any
        chunks = _with_partners(chunks, near, layer, found, similarity, want)
    clock.lap("diversify")
    return layer, chunks


# --- rerank -----------------------------------------------------------------------------------


async def rerank_chunks(
    model: BaseChatModel, question: str, chunks: list[RetrievedChunk], settings: Settings
) -> list[RetrievedChunk]:
    """Reorder the first ``rerank_candidates`` by LLM relevance blended with their first-stage
    rank (``rerank_weight``; ties keep their order)."""
    head, tail = chunks[: settings.rerank_candidates], chunks[settings.rerank_candidates :]
    scores = await llm_scores(
        model,
        question,
        [with_title(c.record.document_title, c.record.text) for c in head],
        passage_chars=settings.rerank_passage_chars,
    )
    order = rerank_order([s / 10.0 for s in scores], settings.rerank_weight)
    return [head[i] for i in order] + tail


async def rerank_in_time(
    model: BaseChatModel,
    question: str,
    chunks: list[RetrievedChunk],
    settings: Settings,
    clock: SearchClock,
) -> list[RetrievedChunk]:
    """:func:`rerank_chunks` within the time left; the chunks as they were if it times out or
    fails (the metrics say which)."""
    metrics = clock.metrics
    try:
        chunks = await asyncio.wait_for(
            rerank_chunks(model, question, chunks, settings), clock.left()
        )
        metrics.reranked = True
    except TimeoutError:
        metrics.timed_out = True
    except Exception as exc:
        metrics.failures.append(f"rerank: {type(exc).__name__}")
    clock.lap("rerank")
    return chunks
