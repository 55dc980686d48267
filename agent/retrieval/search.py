"""The retrieval pipeline: every search in Quire goes through :func:`search`.

    question -> normalize -> [expand: intent + rewrites, <= 4 queries]
             -> per query: pgvector dense + BM25 keyword (concurrently, within the timeout)
             -> weighted RRF across all lists -> time decay -> transcript tag boost
             -> documents before transcripts on near-ties
             -> threshold + fallback layers (seed 000) -> one child per parent -> MMR
             -> [LLM rerank] -> top k

Fallback layers, tried in order until one yields chunks: ``hybrid`` (fused ranking,
similarity >= threshold), ``vector`` (dense ranking, same threshold: used when the keyword
side failed), ``low_threshold`` (similarity >= 0.3), ``any_embedded`` (nearest chunks, no
threshold), ``any_chunk`` (any visible chunk, embedded or not), else ``none``. Every chunk
says which layer produced it, and so do the metrics kept with the answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Literal, TypeVar

import numpy as np
import psycopg
from langchain_core.language_models import BaseChatModel

from agent.db.chunks import (
    BM25Params,
    ChunkRecord,
    ScoredChunkId,
    any_chunks,
    candidate_records,
    dense_candidates,
    fetch_chunks,
    keyword_search,
    with_parent_texts,
)
from agent.db.postings import LibraryState, library_state
from agent.db.read_pool import Read, ReadPool, is_dead_connection
from agent.db.scope import SearchScope
from agent.models import EmbedderUnavailable
from agent.retrieval.boosts import prefer_authoritative, tag_boost, time_decay, utcnow
from agent.retrieval.citations import citation_id
from agent.retrieval.diversity import limit_per_group, mmr_order
from agent.retrieval.expansion import expand_query
from agent.retrieval.fusion import weighted_rrf
from agent.retrieval.rerank import llm_scores
from agent.retrieval.types import RetrievedChunk, normalize_query
from agent.services import Services

logger = logging.getLogger(__name__)
T = TypeVar("T")

SearchMode = Literal["hybrid", "dense", "bm25"]
Layer = Literal["hybrid", "vector", "keyword", "low_threshold", "any_embedded", "any_chunk", "none"]


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


class _Clock:
    """Stage timings and the remaining time budget."""

    def __init__(self, budget: float, metrics: RetrievalMetrics) -> None:
        self.started = time.perf_counter()
        self.deadline = self.started + budget
        self.metrics = metrics
        self._mark = self.started

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.metrics.stages_ms[stage] = round(
            self.metrics.stages_ms.get(stage, 0.0) + (now - self._mark) * 1000, 2
        )
        self._mark = now

    def left(self) -> float:
        return max(self.deadline - time.perf_counter(), 0.0)

    def total(self) -> None:
        self.metrics.stages_ms["total"] = round((time.perf_counter() - self.started) * 1000, 2)


# --- cache --------------------------------------------------------------------------------

_cache: OrderedDict[tuple, tuple[str, float, SearchResult]] = OrderedDict()
"""(scope, query, options) -> (library fingerprint, expiry, result): one entry per search,
replaced when the library changed."""


def _cache_get(key: tuple, fingerprint: str) -> SearchResult | None:
    hit = _cache.get(key)
    if hit is None:
        return None
    seen, expires, result = hit
    if seen != fingerprint or expires < time.monotonic():
        _cache.pop(key, None)
        return None
    _cache.move_to_end(key)
    return result


def _cache_put(key: tuple, fingerprint: str, result: SearchResult, ttl: float, size: int) -> None:
    _cache[key] = (fingerprint, time.monotonic() + ttl, result)
    _cache.move_to_end(key)
    while len(_cache) > size:
        _cache.popitem(last=False)


def clear_search_cache() -> None:
    """Forget every cached search (tests, settings changes)."""
    _cache.clear()


class _Reads:
    """The connections of one search's reads, held until it ends (:mod:`agent.db.read_pool`).

    A read takes a held connection no other read is using, else checks out one more: the
    keyword side (library state, then its hits' records) and the dense side read at once
    when the question's vector is known from the start, and one after the other on a
    single connection while the question is embedded. Autocommit: a search only reads and
    each read is confined to the scope on its own. A connection whose read failed or was
    cut short is given back at once; a read that found its connection dead runs once more
    on a live one (reads are plain SELECTs).
    """

    def __init__(self, pool: ReadPool) -> None:
        self._pool = pool
        self._free: list[psycopg.AsyncConnection] = []
        self._held: list[psycopg.AsyncConnection] = []
        self._started: list[asyncio.Future] = []

    async def read(self, fn: Read[T]) -> T:
        """``fn(connection)`` on a connection of this search (once more on a fresh one if
        the server had closed it)."""
        for attempt in (1, 2):
            conn = await self._take()
            try:
                result = await fn(conn)
            except BaseException as exc:
                await self._drop(conn)
                if attempt == 2 or not is_dead_connection(exc, conn):
                    raise
                await self._pool.drop_dead()
                continue
            self._free.append(conn)
            return result
        raise AssertionError("unreachable")

    async def _take(self) -> psycopg.AsyncConnection:
        if self._free:
            return self._free.pop()
        conn = await self._pool.checkout()
        self._held.append(conn)
        return conn

    async def _drop(self, conn: psycopg.AsyncConnection) -> None:
        self._held.remove(conn)
        with contextlib.suppress(Exception):
            await self._pool.give_back(conn)

    def start(self, read) -> asyncio.Future:
        """Run the coroutine ``read`` now, beside the caller; cancelled when the search ends
        without having used it (a cache hit, a failure)."""
        task = asyncio.ensure_future(read)
        self._started.append(task)
        return task

    async def __aenter__(self) -> _Reads:
        return self

    async def __aexit__(self, *exc) -> None:
        for task in self._started:  # before their connections are given back
            task.cancel()
        await asyncio.gather(*self._started, return_exceptions=True)
        held, self._held, self._free = self._held, [], []
        for conn in held:
            with contextlib.suppress(Exception):
                await self._pool.give_back(conn)


# --- the pipeline -----------------------------------------------------------------------------


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
    clock = _Clock(settings.retrieval_timeout_seconds, metrics)
    query = normalize_query(question)
    if not query:
        clock.total()
        return SearchResult([], "none", metrics)

    # The question is embedded in a thread while the library state (fingerprint and query
    # lexemes), the cache check and the keyword side go on.
    embedding = None
    if options.mode != "bm25":
        embedding = _embed_soon(services, [query], given=query_vector)
    try:
        async with _Reads(services.read_pool) as reads:
            return await _search(
                services, scope, query, options, model, metrics, clock, embedding, reads
            )
    finally:
        if embedding is not None:
            embedding.add_done_callback(_discard)


async def embed_question(services: Services, question: str) -> list[float] | None:
    """``question`` embedded as :func:`search` embeds it, for a turn whose other parts
    (earlier discussions) compare against the same vector; ``None`` if it cannot be
    embedded (each part then degrades on its own)."""
    query = normalize_query(question)
    if not query:
        return None
    try:
        return await asyncio.to_thread(services.embeddings.embedder.embed_query, query)
    except Exception as exc:
        logger.warning("the question could not be embedded: %s", exc)
        return None


async def _search(
    services: Services,
    scope: SearchScope,
    query: str,
    options: SearchOptions,
    model: BaseChatModel | None,
    metrics: RetrievalMetrics,
    clock: _Clock,
    embedding: asyncio.Future | None,
    reads: _Reads,
) -> SearchResult:
    """:func:`search` once the question is normalized and its embedding started."""
    settings = services.settings
    n = max(settings.candidates_per_retriever, options.k)
    key = None
    if options.use_cache and settings.search_cache_ttl_seconds > 0:
        key = (scope, query, options)
    # Given the question's vector, the dense read need not wait for the library state: it
    # starts now, on its own connection, unless a cached result may answer (then the state
    # read goes alone, so that a hit stays one round trip).
    early = None
    if embedding is not None and embedding.done() and not (key and key in _cache):
        early = reads.start(_dense_read(reads, scope, embedding, n))
        await asyncio.sleep(0)  # sent before the state read
    state = None
    if options.mode != "dense" or key is not None:
        lexed = [query] if options.mode != "dense" else []
        state = await reads.read(lambda conn: library_state(conn, scope, lexed))
        clock.lap("state")
    if key is not None:
        cached = _cache_get(key, state.fingerprint)
        if cached is not None:
            hit = replace(cached.metrics, cache_hit=True, stages_ms=dict(metrics.stages_ms))
            clock.total()
            hit.stages_ms["total"] = metrics.stages_ms["total"]
            return SearchResult(cached.chunks, cached.layer, hit)

    if (options.expand or options.rerank) and model is None:
        from agent.models import achat_model

        model = await achat_model(settings.chat_model, settings, 0.0)

    queries = [query]
    if options.expand and model is not None:
        try:
            expansion = await asyncio.wait_for(
                expand_query(
                    model,
                    query,
                    intent_aware=settings.intent_expansion,
                    max_queries=settings.max_queries,
                ),
                timeout=clock.left(),
            )
            queries = [normalize_query(q) or q for q in expansion.queries]
            metrics.intent = expansion.intent
        except TimeoutError:
            metrics.timed_out = True
        except Exception as exc:  # expansion is an optimisation: search the question alone
            metrics.failures.append(f"expand: {type(exc).__name__}")
        clock.lap("expand")
        if len(queries) > 1:
            if embedding is not None:
                embedding = _embed_soon(services, queries[1:], first=embedding)
            if options.mode != "dense":
                state = await reads.read(lambda conn: library_state(conn, scope, queries))
    metrics.queries = queries

    found = await _retrieve(
        services, scope, queries, state, embedding, n, options, clock, reads, early
    )
    if found.embed_failed:
        if options.mode == "dense":
            raise EmbedderUnavailable(
                "The embedding model is not available, so semantic search cannot run."
            ) from found.embed_failed
        # hybrid goes on with its keyword half (not cached: the failure is recorded)
        logger.warning("query embedding failed, keyword search only: %s", found.embed_failed)
        metrics.failures.append(f"embed: {type(found.embed_failed).__name__}")
        options = replace(options, mode="bm25")
    dense_lists, keyword_lists = found.dense, found.keyword
    vectors, records, stored = found.vectors, found.records, found.stored
    keyword_failed = options.mode == "hybrid" and len(keyword_lists) < len(queries)

    lists: list[list[uuid.UUID]] = []
    weights: list[float] = []
    for ranking in dense_lists:
        lists.append([h.chunk_id for h in ranking])
        weights.append(settings.vector_weight if options.mode == "hybrid" else 1.0)
    for ranking in keyword_lists:
        lists.append([h.chunk_id for h in ranking])
        weights.append(settings.keyword_weight if options.mode == "hybrid" else 1.0)
    fused = weighted_rrf(lists, weights, settings.rrf_k)
    clock.lap("fuse")

    similarity = _similarities(stored, vectors)
    scored = _adjust(fused, records, query, settings)
    metrics.candidates = len(scored)

    layer, picked = _apply_layers(
        scored, similarity, dense_lists, options, settings.threshold_fallback, keyword_failed
    )
    if layer == "any_chunk":
        layer, picked, extra = await _last_resort(reads, scope, keyword_lists, options.k)
        records.update(extra)
    clock.lap("layers")

    want = max(options.k, settings.rerank_candidates if options.rerank else 0)
    keyword_scores = _best_keyword_scores(keyword_lists)
    if options.diversify:  # only the MMR pool can be chosen: build just those
        picked = limit_per_group(
            picked,
            want * settings.mmr_pool_factor,
            settings.max_children_per_parent,
            lambda item: records[item[0]].parent_id,
        )
    else:
        picked = picked[:want]
    chunks = [
        RetrievedChunk(
            record=records[cid],
            citation_id=citation_id(cid),
            score=score,
            similarity=similarity.get(cid),
            keyword_score=keyword_scores.get(cid),
            layer=layer,
        )
        for cid, score in picked
    ]
    chunks = _diversify(chunks, stored, want, settings) if options.diversify else chunks[:want]
    clock.lap("diversify")

    if options.rerank and model is not None and len(chunks) > 1 and clock.left() > 0:
        try:
            chunks = await asyncio.wait_for(_rerank(model, query, chunks, settings), clock.left())
            metrics.reranked = True
        except TimeoutError:
            metrics.timed_out = True
        except Exception as exc:
            metrics.failures.append(f"rerank: {type(exc).__name__}")
        clock.lap("rerank")

    chunks = await _with_parents(reads, chunks[: options.k])
    metrics.layer = layer
    metrics.results = len(chunks)
    sims = [c.similarity for c in chunks if c.similarity is not None]
    metrics.average_similarity = round(float(np.mean(sims)), 4) if sims else None
    clock.total()
    result = SearchResult(chunks, layer, metrics)
    if key is not None and not metrics.timed_out and not metrics.failures:
        _cache_put(
            key,
            state.fingerprint,
            result,
            settings.search_cache_ttl_seconds,
            settings.search_cache_size,
        )
    return result


async def _with_parents(reads: _Reads, chunks: list[RetrievedChunk]) -> list[RetrievedChunk]:
    """The chosen chunks with their parents' text (candidates are read without it)."""
    if all(c.record.parent_text is not None or c.record.parent_id is None for c in chunks):
        return chunks
    records = await reads.read(lambda conn: with_parent_texts(conn, [c.record for c in chunks]))
    return [replace(c, record=r) for c, r in zip(chunks, records, strict=True)]


def _unit(vector: Sequence[float]) -> np.ndarray:
    v = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(v))
    return v / norm if norm else v


@dataclass
class _Found:
    """What the two retrievers found: rankings per query, the records and stored vectors
    of every candidate, the query vectors, and an embedding failure if there was one."""

    dense: list[list[ScoredChunkId]] = field(default_factory=list)
    keyword: list[list[ScoredChunkId]] = field(default_factory=list)
    records: dict[uuid.UUID, ChunkRecord] = field(default_factory=dict)
    stored: dict[uuid.UUID, np.ndarray] = field(default_factory=dict)
    vectors: list[np.ndarray] = field(default_factory=list)
    embed_failed: BaseException | None = None


def _embed_soon(
    services: Services,
    queries: list[str],
    first: asyncio.Future | None = None,
    given: Sequence[float] | None = None,
) -> asyncio.Future:
    """Unit query vectors of ``queries`` (after those of ``first``), embedded in a thread and
    timed into ``(vectors, ms)``; ``given``: the one query's vector, already embedded."""
    embedder = services.embeddings.embedder
    if given is not None:
        done = asyncio.get_running_loop().create_future()
        done.set_result(([_unit(given)], 0.0))
        return done

    def embed() -> tuple[list[np.ndarray], float]:
        started = time.perf_counter()
        vectors = [_unit(embedder.embed_query(q)) for q in queries]
        return vectors, (time.perf_counter() - started) * 1000

    async def after_first() -> tuple[list[np.ndarray], float]:
        earlier, ms = await first
        more, more_ms = await asyncio.to_thread(embed)
        return earlier + more, ms + more_ms

    if first is not None:
        return asyncio.ensure_future(after_first())
    return asyncio.ensure_future(asyncio.to_thread(embed))


def _discard(task: asyncio.Future) -> None:
    """Retrieve an unneeded task's outcome so a failure is not reported as unhandled."""
    if not task.cancelled():
        task.exception()


async def keyword_rankings(
    services: Services, scope: SearchScope, state: LibraryState, queries: list[str], n: int
) -> list[list[ScoredChunkId]]:
    """BM25 rankings per query: from the in-memory copy when it is ready, else in SQL."""
    settings = services.settings
    bm25 = BM25Params.from_settings(settings)
    if settings.bm25_memory_index:
        ranked = await services.keyword_indexes.rankings(services.engine, scope, state, n, bm25)
        if ranked is not None:
            return ranked

    async def in_sql(query: str) -> list[ScoredChunkId]:
        async with services.engine.connect() as conn:
            return await keyword_search(conn, scope, query, n, bm25)

    return list(await asyncio.gather(*(in_sql(q) for q in queries)))


DenseRead = tuple[list[ScoredChunkId], dict[uuid.UUID, ChunkRecord], dict[uuid.UUID, np.ndarray]]


async def _dense_read(
    reads: _Reads, scope: SearchScope, embedding: asyncio.Future, n: int, skip: int = 0
) -> tuple[list[DenseRead], float]:
    """The dense candidates of each query vector ``embedding`` gives, after the first
    ``skip``, on one connection; with the milliseconds the reads took."""
    vectors, _ = await embedding
    started = time.perf_counter()
    out: list[DenseRead] = []

    async def each(conn) -> list[DenseRead]:
        return [await dense_candidates(conn, scope, v.tolist(), n) for v in vectors[skip:]]

    if len(vectors) > skip:
        out = await reads.read(each)
    return out, (time.perf_counter() - started) * 1000


async def _retrieve(
    services: Services,
    scope: SearchScope,
    queries: list[str],
    state: LibraryState | None,
    embedding: asyncio.Future | None,
    n: int,
    options: SearchOptions,
    clock: _Clock,
    reads: _Reads,
    early: asyncio.Future | None = None,
) -> _Found:
    """Keyword and dense retrieval at once, each reading its hits' records and vectors.

    ``early``: the dense read of the question, started with the search (its vector was
    given). Each side reads on a connection of its own when both read at once: while the
    question is still being embedded the keyword side ranks (in memory, 1-2 ms) and reads
    its hits first, then dense reads on the same connection; given a vector, the dense read
    runs while BM25 is scored and the keyword hits are read beside it. Parents are read
    later, for the chosen chunks only. Whatever is done by the deadline is used (the rest
    is cancelled and the metrics say so).
    """
    found = _Found()
    stages = clock.metrics.stages_ms

    async def keyword() -> None:
        started = time.perf_counter()
        rankings = await keyword_rankings(services, scope, state, queries, n)
        ids = list(dict.fromkeys(h.chunk_id for ranking in rankings for h in ranking))
        ids = [cid for cid in ids if cid not in found.records]  # dense may have read them
        if options.mode == "hybrid":
            records, stored = await reads.read(lambda conn: candidate_records(conn, scope, ids))
        else:
            records, stored = await reads.read(lambda conn: fetch_chunks(conn, scope, ids)), {}
        found.keyword = rankings
        for cid, record in records.items():
            found.records.setdefault(cid, record)
        for cid, vector in stored.items():
            found.stored.setdefault(cid, vector)
        stages["keyword"] = round((time.perf_counter() - started) * 1000, 2)

    async def dense() -> None:
        try:
            found.vectors, stages["embed"] = await embedding
        except Exception as exc:
            found.embed_failed = exc
            return
        done, ms = await early if early is not None else ([], 0.0)
        more, more_ms = await _dense_read(reads, scope, embedding, n, skip=len(done))
        for hits, records, stored in done + more:
            found.dense.append(hits)
            found.records.update(records)
            found.stored.update(stored)
        stages["dense"] = round(ms + more_ms, 2)

    tasks: dict[asyncio.Task, str] = {}
    if options.mode != "bm25":
        tasks[asyncio.ensure_future(dense())] = "dense"
        await asyncio.sleep(0)  # given a vector, dense sends its read before BM25 is scored
    if options.mode != "dense":
        tasks[asyncio.ensure_future(keyword())] = "keyword"
    done, pending = await asyncio.wait(tasks, timeout=max(clock.left(), 0.05))
    for task in pending:
        task.cancel()
    if pending:
        clock.metrics.timed_out = True
        await asyncio.gather(*pending, return_exceptions=True)
    for task, kind in tasks.items():
        if task in done and task.exception() is not None:
            clock.metrics.failures.append(f"{kind}: {type(task.exception()).__name__}")
            logger.warning("%s search failed: %s", kind, task.exception())
    clock.lap("retrieve")
    return found


def _similarities(
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


def _adjust(
    fused: list[tuple[uuid.UUID, float]],
    records: dict[uuid.UUID, ChunkRecord],
    query: str,
    settings,
) -> list[tuple[uuid.UUID, float]]:
    """Time decay and tag boost on fused scores, then documents before transcripts on ties."""
    now = utcnow()
    half_life = settings.time_decay_half_life_days
    scored: list[tuple[uuid.UUID, float]] = []
    for cid, score in fused:
        record = records.get(cid)
        if record is None:  # not visible (or deleted meanwhile)
            continue
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


def _apply_layers(
    scored: list[tuple[uuid.UUID, float]],
    similarity: dict[uuid.UUID, float],
    dense_lists: list[list[ScoredChunkId]],
    options: SearchOptions,
    low_threshold: float,
    keyword_failed: bool,
) -> tuple[Layer, list[tuple[uuid.UUID, float]]]:
    """The first fallback layer (seed 000) that yields chunks, with those chunks."""
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
    layers: list[tuple[Layer, list[tuple[uuid.UUID, float]]]] = []
    if not keyword_failed:
        layers.append((first, [(c, s) for c, s in scored if similarity.get(c, -1.0) >= threshold]))
    layers.append(("vector", [(c, s) for c, s in by_similarity if s >= threshold]))
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


async def _last_resort(
    reads: _Reads, scope: SearchScope, keyword_lists: list[list[ScoredChunkId]], k: int
) -> tuple[Layer, list[tuple[uuid.UUID, float]], dict[uuid.UUID, ChunkRecord]]:
    """Layer 5: any visible chunk (keyword hits first, then reading order), or nothing."""
    ids = list(dict.fromkeys(h.chunk_id for ranking in keyword_lists for h in ranking))

    async def read(conn):
        found = ids + [cid for cid in await any_chunks(conn, scope, k) if cid not in ids]
        return found[:k], await fetch_chunks(conn, scope, found[:k])

    ids, records = await reads.read(read)
    picked = [(cid, 0.0) for cid in ids[:k] if cid in records]
    return ("any_chunk" if picked else "none"), picked, records


def _best_keyword_scores(keyword_lists: list[list[ScoredChunkId]]) -> dict[uuid.UUID, float]:
    """Each chunk's best BM25 score over the queries."""
    best: dict[uuid.UUID, float] = {}
    for ranking in keyword_lists:
        for hit in ranking:
            best[hit.chunk_id] = max(best.get(hit.chunk_id, 0.0), hit.score)
    return best


def _diversify(
    chunks: list[RetrievedChunk], stored: dict[uuid.UUID, list[float]], k: int, settings
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
    vectors = np.array([_unit(stored[c.record.id]) for c in embedded], dtype=np.float32)
    order = mmr_order([c.score for c in embedded], vectors, k, settings.mmr_lambda)
    return [embedded[i] for i in order]


async def _rerank(
    model: BaseChatModel, question: str, chunks: list[RetrievedChunk], settings
) -> list[RetrievedChunk]:
    """Reorder the first ``rerank_candidates`` by LLM relevance blended with their first-stage
    rank (``rerank_weight``; ties keep their order)."""
    from agent.retrieval.rerank import rerank_order, with_title

    head, tail = chunks[: settings.rerank_candidates], chunks[settings.rerank_candidates :]
    scores = await llm_scores(
        model,
        question,
        [with_title(c.record.document_title, c.record.text) for c in head],
        passage_chars=settings.rerank_passage_chars,
    )
    order = rerank_order([s / 10.0 for s in scores], settings.rerank_weight)
    return [head[i] for i in order] + tail
