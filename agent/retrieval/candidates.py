"""Candidate generation: the queries to search (the question, and its rewrites when expanded),
the library state they are lexed against, and per query a dense (pgvector) and a BM25
ranking, with the records and stored vectors of every candidate."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from dataclasses import dataclass, field

import numpy as np
from langchain_core.language_models import BaseChatModel

from agent.config import Settings
from agent.db.chunks import (
    ChunkRecord,
    ScoredChunkId,
    candidate_records,
    dense_candidates,
    fetch_chunks,
)
from agent.db.keyword_sql import BM25Params, keyword_search
from agent.db.postings import LibraryState, library_state
from agent.db.scope import SearchScope
from agent.retrieval.attribute_words import with_attribute_words
from agent.retrieval.clock import SearchClock
from agent.retrieval.expansion import expand_query
from agent.retrieval.reads import Reads
from agent.retrieval.types import SearchMode, normalize_query
from agent.services import Services

logger = logging.getLogger(__name__)

DenseRead = tuple[list[ScoredChunkId], dict[uuid.UUID, ChunkRecord], dict[uuid.UUID, np.ndarray]]
"""One query's dense hits, with their records and stored vectors."""


@dataclass
class Found:
    """What the two retrievers found: rankings per query, the records and stored vectors
    of every candidate, the query vectors, and an embedding failure if there was one."""

    dense: list[list[ScoredChunkId]] = field(default_factory=list)
    keyword: list[list[ScoredChunkId]] = field(default_factory=list)
    records: dict[uuid.UUID, ChunkRecord] = field(default_factory=dict)
    stored: dict[uuid.UUID, np.ndarray] = field(default_factory=dict)
    vectors: list[np.ndarray] = field(default_factory=list)
    embed_failed: BaseException | None = None


# --- queries ----------------------------------------------------------------------------------


async def read_library_state(reads: Reads, scope: SearchScope, queries: list[str]) -> LibraryState:
    """The library's fingerprint in ``scope`` and the lexemes of ``queries`` (with the
    measures each asks about: :mod:`~agent.retrieval.attribute_words`), in one read."""
    lexed = [with_attribute_words(q) for q in queries]
    return await reads.read(lambda conn: library_state(conn, scope, lexed))


async def expand_queries(
    model: BaseChatModel, query: str, settings: Settings, clock: SearchClock
) -> list[str]:
    """The question and its rewrites (normalized), within the time left; the question alone
    if expansion times out or fails (the metrics say which)."""
    metrics = clock.metrics
    queries = [query]
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
    return queries


# --- the two retrievers -----------------------------------------------------------------------


async def keyword_rankings(
    services: Services, scope: SearchScope, state: LibraryState, queries: list[str], n: int
) -> list[list[ScoredChunkId]]:
    """BM25 rankings per query: from the in-memory copy when it is ready, else in SQL (also
    when the copy fails: the same scores, a little slower)."""
    settings = services.settings
    bm25 = BM25Params.from_settings(settings)
    if settings.bm25_memory_index:
        try:
            ranked = await services.keyword_indexes.rankings(services.engine, scope, state, n, bm25)
        except Exception:
            logger.exception("the in-memory BM25 copy failed: scoring in SQL")
            ranked = None
        if ranked is not None:
            return ranked

    async def in_sql(query: str) -> list[ScoredChunkId]:
        async with services.engine.connect() as conn:
            return await keyword_search(conn, scope, with_attribute_words(query), n, bm25)

    return list(await asyncio.gather(*(in_sql(q) for q in queries)))


async def dense_read(
    reads: Reads, scope: SearchScope, embedding: asyncio.Future, n: int, skip: int = 0
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


async def _keyword_side(
    services: Services,
    scope: SearchScope,
    state: LibraryState | None,
    queries: list[str],
    n: int,
    mode: SearchMode,
    reads: Reads,
    found: Found,
    stages: dict[str, float],
) -> None:
    """BM25 rankings into ``found``, with the records (and, for hybrid, stored vectors) of
    the hits the dense side has not read."""
    started = time.perf_counter()
    rankings = await keyword_rankings(services, scope, state, queries, n)
    ids = list(dict.fromkeys(h.chunk_id for ranking in rankings for h in ranking))
    ids = [cid for cid in ids if cid not in found.records]  # dense may have read them
    if mode == "hybrid":
        records, stored = await reads.read(lambda conn: candidate_records(conn, scope, ids))
    else:
        records, stored = await reads.read(lambda conn: fetch_chunks(conn, scope, ids)), {}
    found.keyword = rankings
    for cid, record in records.items():
        found.records.setdefault(cid, record)
    for cid, vector in stored.items():
        found.stored.setdefault(cid, vector)
    stages["keyword"] = round((time.perf_counter() - started) * 1000, 2)


async def _dense_side(
    reads: Reads,
    scope: SearchScope,
    embedding: asyncio.Future,
    n: int,
    early: asyncio.Future | None,
    found: Found,
    stages: dict[str, float],
) -> None:
    """Dense rankings into ``found`` (those ``early`` read first, then the rest), or the
    embedding failure."""
    try:
        found.vectors, stages["embed"] = await embedding
    except Exception as exc:
        found.embed_failed = exc
        return
    done, ms = await early if early is not None else ([], 0.0)
    more, more_ms = await dense_read(reads, scope, embedding, n, skip=len(done))
    for hits, records, stored in done + more:
        found.dense.append(hits)
        found.records.update(records)
        found.stored.update(stored)
    stages["dense"] = round(ms + more_ms, 2)


async def _wait_within(tasks: dict[asyncio.Future, str], clock: SearchClock) -> None:
    """Wait for ``tasks`` until the deadline: cancel what is not done (the metrics say it
    timed out) and record each failure."""
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


async def retrieve(
    services: Services,
    scope: SearchScope,
    queries: list[str],
    state: LibraryState | None,
    embedding: asyncio.Future | None,
    n: int,
    mode: SearchMode,
    clock: SearchClock,
    reads: Reads,
    early: asyncio.Future | None = None,
) -> Found:
    """Keyword and dense retrieval at once, each reading its hits' records and vectors.

    ``early``: the dense read of the question, started with the search (its vector was
    given). Each side reads on a connection of its own when both read at once: while the
    question is still being embedded the keyword side ranks (in memory, 1-2 ms) and reads
    its hits first, then dense reads on the same connection; given a vector, the dense read
    runs while BM25 is scored and the keyword hits are read beside it. Parents are read
    later, for the chosen chunks only. Whatever is done by the deadline is used (the rest
    is cancelled and the metrics say so).
    """
    found = Found()
    stages = clock.metrics.stages_ms
    tasks: dict[asyncio.Future, str] = {}
    if mode != "bm25":
        dense = _dense_side(reads, scope, embedding, n, early, found, stages)
        tasks[asyncio.ensure_future(dense)] = "dense"
        await asyncio.sleep(0)  # given a vector, dense sends its read before BM25 is scored
    if mode != "dense":
        keyword = _keyword_side(services, scope, state, queries, n, mode, reads, found, stages)
        tasks[asyncio.ensure_future(keyword)] = "keyword"
    await _wait_within(tasks, clock)
    clock.lap("retrieve")
    return found
