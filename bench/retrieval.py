"""Retrieval latency benchmark (``quire bench retrieval`` and ``bench/retrieval.py``).

Builds a synthetic corpus in its own database (``quire_bench``, never the user's data) and
times, over the same queries in the same run: the query embedding alone, dense search,
BM25 keyword search, hybrid search (embedding included) and a raw pgvector top-k query.

The corpus, by default (document it with the figures):

* 10 users; the *target* user owns 100,000 child chunks (1,000 documents x 100 chunks),
  each of the 9 others owns a tenth of that (10,000 chunks), ~190,000 vectors in all, so
  per-user filtering matters (the target owns ~53% of the rows). 10 x 100,000 would be
  1M rows, too much for a 2-core box.
* Chunk text: runs of consecutive sentences (400-700 characters, like real child chunks)
  from the two books in ``shared/data/books``, starting at random places, so BM25 sees the
  real vocabulary and term statistics. Every 5 children form one parent chunk.
* Vectors: embedding 190k texts with MiniLM would take ~30 minutes here, so a pool of
  2,000 book sentences is embedded once with the real embedder, and each chunk's vector is
  ``normalize(anchor + 0.4 * other + noise)``: ``anchor`` the pool sentence nearest to the
  chunk's place in the books, ``other`` a random pool vector, ``noise`` Gaussian with norm
  ~0.3. Nearby text gets nearby vectors and the space keeps MiniLM's cluster structure.
* Rows go in with binary ``COPY`` (psycopg); BM25 statistics (``keyword_terms``,
  ``documents.keyword_chunks/keyword_tokens``) are then computed set-based, with exactly the
  SQL ingestion runs per document, applied to all documents at once. In the benchmark
  database the HNSW index is dropped for the load and rebuilt afterwards by the real
  :func:`ensure_embedding_store` (timed), which is far faster than ~190k graph inserts.

The corpus is kept and reused by later runs (``--rebuild`` drops the database).

Here: the questions, the targets and the figures. The corpus' shape and rows are in
:mod:`bench.retrieval_corpus`, building or reusing it in :mod:`bench.retrieval_build`, its
database in :mod:`bench.retrieval_database`, the timed operations in
:mod:`bench.retrieval_timing` and the crowded reads in :mod:`bench.retrieval_crowd`.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from agent.db.scope import SearchScope
from agent.retrieval.search import clear_search_cache
from agent.retrieval.types import normalize_query
from agent.services import Services
from bench.progress import Log, quiet
from bench.retrieval_build import (
    BuildFigures,
    build_corpus,
    corpus_users,
    drop_corpus,
    ensure_corpus,
)
from bench.retrieval_corpus import CorpusSpec
from bench.retrieval_crowd import CROWD, crowded_reads, crowded_summary
from bench.retrieval_database import (
    BENCH_DATABASE,
    drop_bench_database,
    open_bench_services,
)
from bench.retrieval_timing import (
    OPERATIONS,
    LatencyFigures,
    QueryTally,
    TimedSearch,
    check_results,
    latency_figures,
    time_queries,
    warm_search,
)

__all__ = [
    "BENCH_DATABASE",
    "CROWD",
    "HYBRID_P95_TARGET_MS",
    "OPERATIONS",
    "QUESTIONS",
    "RATIO_TARGET",
    "BuildFigures",
    "CorpusSpec",
    "LatencyFigures",
    "RetrievalFigures",
    "bench_retrieval",
    "build_corpus",
    "crowded_summary",
    "drop_bench_database",
    "drop_corpus",
    "ensure_corpus",
    "open_bench_services",
    "run_retrieval_bench",
]

HYBRID_P95_TARGET_MS = 100.0
RATIO_TARGET = 3.0

# Cycled when more queries are asked for than there are questions.
QUESTIONS = [
    "Why does Alice follow the White Rabbit down the rabbit hole?",
    "What happens when Alice drinks from the bottle labelled DRINK ME?",
    "How does Alice grow and shrink in Wonderland?",
    "What is the pool of tears?",
    "Who takes part in the Caucus-race?",
    "What does the Caterpillar ask Alice?",
    "What advice does the Caterpillar give about the mushroom?",
    "Why is the Duchess's kitchen full of pepper?",
    "What happens to the baby that turns into a pig?",
    "Where does the Cheshire Cat say the March Hare lives?",
    "Why does the Cheshire Cat grin and vanish?",
    "Who is at the mad tea-party?",
    "Why is it always six o'clock at the Hatter's tea-party?",
    "What riddle does the Hatter ask about the raven and the writing-desk?",
    "What story does the Dormouse tell about the treacle well?",
    "Why are the gardeners painting the roses red?",
    "How is croquet played at the Queen's croquet-ground?",
    "Why does the Queen of Hearts keep shouting off with her head?",
    "What is the Mock Turtle's story about school in the sea?",
    "What is the Lobster Quadrille?",
    "Who stole the tarts?",
    "What evidence is given at the Knave's trial?",
    "What does Alice say to the King at the trial?",
    "How does Alice's dream end?",
    "What does Alice's sister imagine after Alice wakes up?",
    "Why does Mrs. Bennet want her daughters to marry?",
    "Who is Mr. Bingley and why is his arrival at Netherfield important?",
    "What does Mr. Darcy say about Elizabeth at the first ball?",
    "Why does Elizabeth dislike Mr. Darcy at first?",
    "How does Jane fall ill at Netherfield?",
    "What is Mr. Collins's proposal to Elizabeth like?",
    "Why does Charlotte Lucas accept Mr. Collins?",
    "What does Mr. Wickham tell Elizabeth about Darcy?",
    "How does Lady Catherine de Bourgh treat her guests at Rosings?",
    "What happens when Darcy first proposes to Elizabeth at Hunsford?",
    "What does Darcy's letter explain about Wickham?",
    "How does Elizabeth feel when she visits Pemberley?",
    "Why does Lydia elope with Wickham?",
    "What role does Darcy play in arranging Lydia's marriage?",
    "Why does Lady Catherine visit Longbourn to confront Elizabeth?",
    "How does Darcy propose the second time?",
    "How does Mr. Bennet react to Elizabeth's engagement?",
    "Why does Bingley leave Netherfield so suddenly?",
    "What does Caroline Bingley think of Elizabeth?",
    "What is the entail on the Longbourn estate?",
    "How does Mary Bennet behave at the Netherfield ball?",
    "What does Elizabeth learn about Georgiana Darcy?",
    "How do the Gardiners help Elizabeth and Jane?",
    "What is the relationship between pride and prejudice in the novel?",
    "How does Jane Bennet finally become engaged to Bingley?",
]


@dataclass
class RetrievalFigures:
    """Everything ``quire bench retrieval`` prints and stores."""

    database: str
    corpus: dict
    build: BuildFigures
    queries: int
    k: int
    candidates: int
    """Candidates dense and keyword search return inside hybrid (``candidates_per_retriever``)."""
    latencies: list[LatencyFigures]
    hybrid_over_raw_p95: float
    """Hybrid p95 (query embedding included) over raw p95 (no embedding)."""
    search_over_raw_p95: float
    """Hybrid search given the query vector (``hybrid_search``) p95 over the raw top-``k``
    p95 (``k`` the answer's chunks, fewer neighbours than hybrid reads)."""
    search_over_raw_candidates_p95: float
    """``hybrid_search`` p95 over the raw query for as many neighbours as hybrid's dense
    side reads (``raw_candidates``): same vector, same depth, so the ratio is what hybrid
    adds (BM25, records, fusion, MMR, parents) over that one pgvector query. The gate."""
    hybrid_over_raw_question_p95: float
    """Hybrid p95 over ``raw_question`` p95: both from the question's text, embedding
    included on both sides."""
    hybrid_p95_target_ms: float
    ratio_target: float
    meets_p95_target: bool
    meets_ratio_target: bool
    """``search_over_raw_candidates_p95`` within the target. The issue leaves the raw
    query's ``k`` and the embedding's side open; this compares like with like (the same
    vector given to both, the same depth). Taken literally, the embedding on the hybrid
    side only (``hybrid_over_raw_p95``), the target is out of reach by construction: the
    embedding alone costs ~3.5x the raw query. The other readings are printed beside it."""
    foreign_hits: int
    """Hits (any operation) from documents the target user may not see: must be 0."""
    short_results: int
    """Queries where raw or hybrid returned fewer than ``k`` hits."""
    hybrid_timeouts: int
    """Hybrid searches cut by ``retrieval_timeout_seconds`` or with a failed side."""
    hybrid_stages_p50_ms: dict[str, float]
    """Median of each stage the pipeline timed (its own ``stages_ms``)."""
    uses_hnsw: dict[str, bool]
    """Whether the plans of the raw and dense queries scan the HNSW index."""
    load_avg_before: list[float]
    load_avg_after: list[float]
    bm25_memory_load_s: float | None = None
    """Loading the target user's postings into the in-memory BM25 copy (a cold process)."""
    bm25_memory_postings: int = 0
    crowded_reads_p50_ms: dict[str, dict[str, float]] = field(default_factory=dict)
    """Search reads (library state, dense, SQL BM25), p50 ms, as the corpus is (``as is``) and
    with :data:`CROWD` more documents of other users (``crowded``, never committed): what
    one user's search costs must not grow with everyone else's library."""
    crowd_documents: int = 0
    with_embedding: list[LatencyFigures] = field(default_factory=list)
    """Dense, BM25 (memory copy) and SQL BM25 each with its question's embedding added:
    what a search from the question's text costs (``latencies`` are given the vector)."""
    notes: list[str] = field(default_factory=list)

    def crowded_summary(self) -> str:
        """The crowded reads in one line ('' when not measured)."""
        return crowded_summary(self.crowded_reads_p50_ms, self.crowd_documents)

    def latency(self, operation: str) -> LatencyFigures:
        """The figures of one operation."""
        return next(f for f in self.latencies if f.operation == operation)


def _ratio(over: float, under: float) -> float:
    return round(over / under, 2) if under > 0 else float("inf")


def _p95_ratios(latencies: list[LatencyFigures]) -> dict[str, float]:
    """The p95 ratios of :class:`RetrievalFigures`, by field name."""
    p95 = {f.operation: f.p95_ms for f in latencies}
    return {
        "hybrid_over_raw_p95": _ratio(p95["hybrid"], p95["raw"]),
        "search_over_raw_p95": _ratio(p95["hybrid_search"], p95["raw"]),
        "search_over_raw_candidates_p95": _ratio(p95["hybrid_search"], p95["raw_candidates"]),
        "hybrid_over_raw_question_p95": _ratio(p95["hybrid"], p95["raw_question"]),
    }


async def _crowded(
    timed: TimedSearch, spec: CorpusSpec, question: str, crowd: int, log: Log
) -> dict[str, dict[str, float]]:
    """:func:`crowded_reads` with the corpus' other users as the crowd's owners."""
    log(f"timing the search's reads with {crowd} more documents of other users...")
    users = await corpus_users(timed.services, spec)
    others = [u for u in users.values() if u != timed.target]
    vector = timed.services.embeddings.embedder.embed_query(question)
    return await crowded_reads(timed.services, timed.scope, others, question, vector, crowd)


def _stages_p50(tally: QueryTally) -> dict[str, float]:
    return {stage: round(float(np.percentile(v, 50)), 2) for stage, v in tally.stages.items()}


async def bench_retrieval(
    services: Services,
    spec: CorpusSpec | None = None,
    queries: int = 200,
    k: int | None = None,
    rebuild: bool = False,
    index_during_load: bool = True,
    warmup: int = 20,
    log: Log = quiet,
    crowd: int = CROWD,
) -> RetrievalFigures:
    """Build or reuse the corpus, then time every operation on the same ``queries`` questions.

    Queries run one after another (a single client); each question is embedded, then raw,
    dense and keyword search run on one pooled connection, then ``hybrid_search`` runs end
    to end. ``warmup`` untimed questions go first.
    """
    spec = spec or CorpusSpec()
    settings = services.settings
    k = k or settings.top_k_specific
    n = max(settings.candidates_per_retriever, k)
    build = await ensure_corpus(services, spec, rebuild, index_during_load, log)
    target = (await corpus_users(services, spec))[spec.user_names()[0]]
    timed = TimedSearch(services, target, SearchScope(user_id=target), k, n)
    questions = [normalize_query(QUESTIONS[i % len(QUESTIONS)]) for i in range(queries)]
    memory_load_s, memory_postings = await warm_search(timed, log)
    load_before = list(os.getloadavg())
    warmup = min(warmup, len(questions))  # the warm-up reuses the first questions
    log(f"timing {queries} queries (+{warmup} warm-up)...")
    tally = await time_queries(timed, questions, warmup)
    clear_search_cache()
    load_after = list(os.getloadavg())
    crowded = await _crowded(timed, spec, questions[0], crowd, log) if crowd else {}
    database, foreign, uses_hnsw = await check_results(timed, tally.hit_ids, questions[0])

    latencies = [latency_figures(tally.times[op], op) for op in OPERATIONS]
    embed = tally.times["embed"]
    with_embedding = [
        latency_figures([e + t for e, t in zip(embed, tally.times[op], strict=True)], op)
        for op in ("dense", "keyword", "keyword_sql")
    ]
    ratios = _p95_ratios(latencies)
    hybrid_p95 = next(f.p95_ms for f in latencies if f.operation == "hybrid")
    return RetrievalFigures(
        database=database,
        corpus=asdict(spec),
        build=build,
        queries=queries,
        k=k,
        candidates=n,
        latencies=latencies,
        **ratios,
        hybrid_p95_target_ms=HYBRID_P95_TARGET_MS,
        ratio_target=RATIO_TARGET,
        meets_p95_target=hybrid_p95 <= HYBRID_P95_TARGET_MS,
        meets_ratio_target=ratios["search_over_raw_candidates_p95"] <= RATIO_TARGET,
        foreign_hits=int(tally.foreign + foreign),
        short_results=int(tally.short),
        hybrid_timeouts=int(tally.timeouts),
        hybrid_stages_p50_ms=_stages_p50(tally),
        uses_hnsw=uses_hnsw,
        load_avg_before=[round(x, 2) for x in load_before],
        load_avg_after=[round(x, 2) for x in load_after],
        bm25_memory_load_s=memory_load_s,
        bm25_memory_postings=memory_postings,
        crowded_reads_p50_ms=crowded,
        crowd_documents=crowd,
        with_embedding=with_embedding,
        notes=[
            f"{len(QUESTIONS)} handwritten questions about the two books, cycled",
            "single client, queries one after another, warm database caches",
            "hybrid: search cache cleared before each question (hybrid_cached: a repeat)",
            "SQL BM25 timed in a pass of its own after the others (searches use it only"
            " while the memory copy is off or loading)",
            "chunk vectors: normalized mixes of real MiniLM vectors of book sentences",
        ],
    )


async def run_retrieval_bench(
    queries: int = 200,
    chunks: int = 100_000,
    rebuild: bool = False,
    log: Log = quiet,
    database: str = BENCH_DATABASE,
    pool_size: int | None = None,
) -> tuple[RetrievalFigures, Path]:
    """``quire bench retrieval``: the benchmark in its own database; figures and data folder.

    ``pool_size``: how many book sentences are embedded to draw chunk vectors from (the
    corpus default when ``None``; smaller only for tiny test runs).
    """
    services = await open_bench_services(rebuild, database=database)
    try:
        figures = await bench_retrieval(
            services,
            CorpusSpec.scaled(chunks, **({"pool_size": pool_size} if pool_size else {})),
            queries=queries,
            index_during_load=False,
            log=log,
        )
        return figures, services.settings.data_dir
    finally:
        await services.close()
