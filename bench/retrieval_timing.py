"""Timing the retrieval benchmark's operations on the same questions, one after another.

Each question is embedded, then the raw pgvector queries, dense and keyword search run on
one pooled connection, then the hybrid pipeline end to end and given the vector, then
``hybrid_search`` again (a cache hit); the order rotates from question to question. SQL
BM25 is timed in a pass of its own over the same questions afterwards: searches run it only
while the memory copy is off or loading, and its postings reads (gigabytes at 1M chunks)
would push the vector index out of shared buffers between the other operations. Before
timing, the search's tables are read into the caches (a running server has them warm);
afterwards, the query plans are checked for the HNSW index and every hit for its owner.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from sqlalchemy import text

from agent.db.chunks import dense_search
from agent.db.documents import vector_literal
from agent.db.keyword_sql import BM25Params, keyword_search
from agent.db.postings import library_state
from agent.db.scope import SearchScope
from agent.retrieval.hybrid import hybrid_search
from agent.retrieval.search import SearchOptions, clear_search_cache, keyword_rankings, search
from agent.services import Services
from bench.progress import Log
from bench.retrieval_database import HNSW_INDEX

OPERATIONS = (
    "embed",
    "dense",
    "keyword",
    "keyword_sql",
    "hybrid",
    "hybrid_search",
    "raw",
    "raw_candidates",
    "raw_question",
    "hybrid_cached",
)
"""``embed``: query embedding alone; ``dense``/``keyword``: the store's searches with a
vector given (as many candidates as hybrid asks each for; ``keyword`` as hybrid runs it:
library state, then BM25 from the in-memory copy); ``keyword_sql``: BM25 scored in SQL
(what searches use while the copy loads, or with it off; timed in a pass of its own
after the others); ``hybrid``: the pipeline behind
``hybrid_search`` end to end for a new question (search cache cleared first: library
fingerprint, embedding, both searches, fusion, fetch, MMR); ``hybrid_search``: the same
pipeline given the question's vector (``search(query_vector=...)``: everything but the
embedding, which ``embed`` shows); ``raw_candidates``: the raw query for as many
neighbours as hybrid reads from each side (``candidates_per_retriever``); ``raw``: the simplest pgvector
top-k over the user's documents; ``raw_question``: that query from the question's text
(the embedding and the raw query of the same question, added up: what ``hybrid`` compares
with when both start from the question); ``hybrid_cached``: ``hybrid_search`` asked the same
question again (a search-cache hit), for information only."""

RAW_TOP_K_SQL = (
    "SELECT id FROM child_chunks "
    "WHERE document_id IN (SELECT id FROM documents WHERE user_id = :u) "
    "ORDER BY embedding <=> CAST(:q AS vector) LIMIT :k"
)
_RAW_TOP_K = text(RAW_TOP_K_SQL)

SEARCH_RELATIONS = (
    "child_chunks",
    "parent_chunks",
    "documents",
    "keyword_postings",
    "keyword_terms",
)


HOT_RELATIONS = ("child_chunks", HNSW_INDEX, "documents", "parent_chunks")
"""What every dense search reads: kept in shared buffers by a running server."""


@dataclass
class LatencyFigures:
    """One operation's latency over the queries, in milliseconds."""

    operation: str
    p50_ms: float
    p95_ms: float
    mean_ms: float
    max_ms: float


def latency_figures(values: list[float], operation: str) -> LatencyFigures:
    """The figures of one operation from its times in seconds."""
    arr = np.array(values) * 1000
    p50, p95 = np.percentile(arr, [50, 95])
    return LatencyFigures(
        operation,
        round(float(p50), 2),
        round(float(p95), 2),
        round(float(arr.mean()), 2),
        round(float(arr.max()), 2),
    )


async def prewarm_search_relations(services: Services) -> int:
    """Read the tables search touches, and all their indexes, into the OS page cache, and
    those of :data:`HOT_RELATIONS` into shared buffers too, so a database opened cold (after
    other benchmarks, or a restart) is timed warm as a running server is.

    Uses ``pg_prewarm`` (shipped with Postgres' contrib); returns the MiB read, 0 where the
    extension is not available.
    """
    from sqlalchemy.exc import DBAPIError

    try:
        async with services.engine.begin() as conn:
            await conn.execute(text("CREATE EXTENSION IF NOT EXISTS pg_prewarm"))
            blocks = (
                await conn.execute(
                    text(
                        "SELECT coalesce(sum(pg_prewarm(c.oid, 'read')), 0) FROM pg_class c "
                        "WHERE c.relname = ANY(:names) OR c.oid IN ("
                        "  SELECT indexrelid FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid"
                        "  WHERE t.relname = ANY(:names))"
                    ),
                    {"names": list(SEARCH_RELATIONS)},
                )
            ).scalar()
            await conn.execute(
                text("SELECT pg_prewarm(c.oid, 'buffer') FROM pg_class c WHERE relname = ANY(:n)"),
                {"n": list(HOT_RELATIONS)},
            )
    except DBAPIError:
        return 0
    return int(blocks) * 8192 // 2**20


@dataclass(frozen=True)
class TimedSearch:
    """Whose search is timed and how deep: ``k`` hits, ``n`` candidates from each side."""

    services: Services
    target: uuid.UUID
    scope: SearchScope
    k: int
    n: int


async def warm_search(timed: TimedSearch, log: Log) -> tuple[float | None, int]:
    """Prewarm the tables, then load the in-memory BM25 copy (when on) as a running server
    has it; the seconds that load took (``None``: off) and the postings it holds."""
    services = timed.services
    prewarmed = await prewarm_search_relations(services)
    if prewarmed:
        log(f"read {prewarmed} MiB of tables and indexes into the OS cache (pg_prewarm)")
    if not services.settings.bm25_memory_index:
        return None, 0
    t = time.perf_counter()
    postings = await services.keyword_indexes.warm(services.engine, timed.scope)
    load_s = round(time.perf_counter() - t, 2)
    log(f"loaded {postings} BM25 postings into memory in {load_s} s")
    return load_s, postings


Step = Callable[[object], Awaitable[object]]


def _steps(timed: TimedSearch, question: str, vector: Sequence[float]) -> list[tuple[str, Step]]:
    """The operations timed on one connection, for one question and its vector."""
    services, scope, target, k, n = timed.services, timed.scope, timed.target, timed.k, timed.n

    async def raw_top_k(conn):
        q = {"u": target, "q": vector_literal(vector), "k": k}
        return (await conn.execute(_RAW_TOP_K, q)).scalars().all()

    async def raw_candidates(conn):
        q = {"u": target, "q": vector_literal(vector), "k": n}
        return (await conn.execute(_RAW_TOP_K, q)).scalars().all()

    async def dense(conn):
        return await dense_search(conn, scope, vector, n)

    async def keyword(conn):
        state = await library_state(conn, scope, [question])
        return (await keyword_rankings(services, scope, state, [question], n))[0]

    async def hybrid(_):
        clear_search_cache()  # every timed question is a new one (the questions repeat)
        # exactly what hybrid_search(services, scope, question, k) runs, with its metrics
        return await search(services, scope, question, SearchOptions(k=k))

    async def hybrid_given_vector(_):
        clear_search_cache()
        return await search(services, scope, question, SearchOptions(k=k), query_vector=vector)

    return [
        ("raw", raw_top_k),
        ("raw_candidates", raw_candidates),
        ("dense", dense),
        ("keyword", keyword),
        ("hybrid", hybrid),
        ("hybrid_search", hybrid_given_vector),
    ]


async def time_question(
    timed: TimedSearch, question: str, turn: int
) -> tuple[dict[str, float], dict[str, object], list]:
    """Time every operation for one question (the order rotated by ``turn``): seconds and
    results per operation, and the cached ``hybrid_search`` hits."""
    embedder = timed.services.embeddings.embedder
    t = time.perf_counter()
    vector = embedder.embed_query(question)
    took = {"embed": time.perf_counter() - t}
    # each query's HNSW pages stay cached for the next operation on the same vector:
    # rotate the order so that every operation goes first equally often
    steps = _steps(timed, question, vector)
    steps = steps[turn % len(steps) :] + steps[: turn % len(steps)]
    got: dict[str, object] = {}
    async with timed.services.engine.connect() as conn:
        for op, step in steps:
            t = time.perf_counter()
            got[op] = await step(conn)
            took[op] = time.perf_counter() - t
    took["raw_question"] = took["embed"] + took["raw"]
    t = time.perf_counter()
    cached = await hybrid_search(timed.services, timed.scope, question, timed.k)
    took["hybrid_cached"] = time.perf_counter() - t
    return took, got, cached


@dataclass
class QueryTally:
    """What the timed questions gave: seconds per operation, hybrid's stages, every hit."""

    times: dict[str, list[float]] = field(default_factory=lambda: {op: [] for op in OPERATIONS})
    stages: dict[str, list[float]] = field(default_factory=dict)
    """Milliseconds of each stage the hybrid pipeline timed (its own ``stages_ms``)."""
    hit_ids: set[uuid.UUID] = field(default_factory=set)
    """Chunks the raw, dense and keyword searches returned (their owners are checked)."""
    foreign: int = 0
    """Hybrid hits (new, cached, given the vector) from other users' documents."""
    short: int = 0
    """Questions where raw or hybrid returned fewer than ``k`` hits."""
    timeouts: int = 0
    """Hybrid searches cut by the timeout or with a failed side."""

    def add(self, took: dict[str, float], got: dict, cached: list, timed: TimedSearch) -> None:
        """Count one question's times and results."""
        for op in OPERATIONS:
            if op in took:  # keyword_sql: its own pass (time_sql_bm25)
                self.times[op].append(took[op])
        result = got["hybrid"]
        for stage, ms in result.metrics.stages_ms.items():
            self.stages.setdefault(stage, []).append(ms)
        self.hit_ids.update(
            got["raw"],
            (h.chunk_id for h in [*got["dense"], *got["keyword"]]),
        )
        given = got["hybrid_search"].chunks
        self.foreign += sum(
            c.record.owner_id != timed.target for c in [*result.chunks, *cached, *given]
        )
        self.short += len(got["raw"]) < timed.k or len(result.chunks) < timed.k
        self.timeouts += result.metrics.timed_out or bool(result.metrics.failures)


async def time_queries(timed: TimedSearch, questions: list[str], warmup: int) -> QueryTally:
    """Time every question after ``warmup`` untimed ones (the first questions again), then
    SQL BM25 on the same questions in a pass of its own (:func:`time_sql_bm25`)."""
    tally = QueryTally()
    for i, question in enumerate(questions[:warmup] + questions):
        took, got, cached = await time_question(timed, question, i)
        if i >= warmup:
            tally.add(took, got, cached, timed)
    await time_sql_bm25(timed, questions, warmup, tally)
    return tally


async def time_sql_bm25(
    timed: TimedSearch, questions: list[str], warmup: int, tally: QueryTally
) -> None:
    """SQL BM25 (``keyword_sql``) for every question after ``warmup`` untimed ones, on one
    pooled connection, into ``tally`` (its hits join the owner check)."""
    bm25 = BM25Params.from_settings(timed.services.settings)
    async with timed.services.engine.connect() as conn:
        for i, question in enumerate(questions[:warmup] + questions):
            t = time.perf_counter()
            hits = await keyword_search(conn, timed.scope, question, timed.n, bm25)
            if i >= warmup:
                tally.times["keyword_sql"].append(time.perf_counter() - t)
                tally.hit_ids.update(h.chunk_id for h in hits)


async def _plan_uses_hnsw(conn, sql: str, params: dict) -> bool:
    rows = await conn.execute(text(f"EXPLAIN {sql}"), params)
    return any(HNSW_INDEX in r[0] for r in rows)


async def check_results(
    timed: TimedSearch, hit_ids: set[uuid.UUID], probe_question: str
) -> tuple[str, int, dict[str, bool]]:
    """The database's name, how many of ``hit_ids`` belong to other users' documents, and
    whether the plans of the raw and dense queries (for ``probe_question``) scan HNSW."""
    async with timed.services.engine.connect() as conn:
        database = (await conn.execute(text("SELECT current_database()"))).scalar()
        foreign = (
            await conn.execute(
                text(
                    "SELECT count(*) FROM child_chunks c JOIN documents d ON d.id = c.document_id "
                    "WHERE c.id = ANY(:ids) AND d.user_id <> :u"
                ),
                {"ids": list(hit_ids), "u": timed.target},
            )
        ).scalar()
        probe = vector_literal(timed.services.embeddings.embedder.embed_query(probe_question))
        visible, params = timed.scope.visible_documents_sql()
        uses_hnsw = {
            "raw": await _plan_uses_hnsw(
                conn, RAW_TOP_K_SQL, {"u": timed.target, "q": probe, "k": timed.k}
            ),
            "dense": await _plan_uses_hnsw(
                conn,
                f"WITH visible AS ({visible}) SELECT c.id FROM child_chunks c "
                "WHERE c.document_id IN (SELECT id FROM visible) AND c.embedding IS NOT NULL "
                "ORDER BY c.embedding <=> CAST(:q AS vector) LIMIT :k",
                {**params, "q": probe, "k": timed.n},
            ),
        }
    return database, foreign, uses_hnsw
