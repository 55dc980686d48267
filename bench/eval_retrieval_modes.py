"""The configurations ``quire eval retrieval`` compares, and scoring one of them: every
test query through the real :func:`agent.retrieval.search.search` pipeline, its chunks
ranked into documents (a document ranks where its best chunk ranks) and scored with the
BEIR definitions of :mod:`bench.metrics`."""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from agent.db.scope import SearchScope
from agent.retrieval.search import SearchMode, SearchOptions, search
from agent.services import Services
from bench.eval_retrieval_data import BeirDataset
from bench.metrics import mean, mrr_at_k, ndcg_at_k, percentile, recall_at_k
from bench.progress import Progress


@dataclass(frozen=True)
class ModeSpec:
    """One evaluated configuration of the search pipeline."""

    name: str
    search_mode: SearchMode
    diversify: bool = False
    rerank: bool = False


MODES: dict[str, ModeSpec] = {
    "bm25": ModeSpec("bm25", "bm25"),
    "dense": ModeSpec("dense", "dense"),
    "hybrid": ModeSpec("hybrid", "hybrid"),
    "hybrid-mmr": ModeSpec("hybrid-mmr", "hybrid", diversify=True),
    "hybrid-rerank": ModeSpec("hybrid-rerank", "hybrid", rerank=True),
}


@dataclass
class ModeResult:
    """Scores and latency of one mode over the evaluated queries."""

    mode: str
    queries: int
    ndcg_at_10: float
    recall_at_100: float
    mrr_at_10: float
    latency_p50_ms: float
    latency_p95_ms: float
    latency_mean_ms: float
    documents_per_query: float
    """Distinct documents the returned chunks cover, on average (Recall@100 sees these)."""
    timed_out: int = 0
    failures: int = 0
    per_query: dict[str, dict] = field(default_factory=dict)


def rank_documents(
    document_ids: Sequence[uuid.UUID], by_document: dict[uuid.UUID, list[str]]
) -> list[str]:
    """BEIR ids in the order their first chunk appears (unknown documents are skipped)."""
    ranked: list[str] = []
    seen: set[str] = set()
    for doc in document_ids:
        for beir in by_document.get(doc, ()):
            if beir not in seen:
                seen.add(beir)
                ranked.append(beir)
    return ranked


async def _warm(services: Services, scope: SearchScope, spec: ModeSpec) -> None:
    """Load what the mode reads before timing it, as a running server has it loaded."""
    if spec.search_mode != "dense" and services.settings.bm25_memory_index:
        # load the in-memory BM25 copy before timing, as a running server has it
        await services.keyword_indexes.warm(services.engine, scope)
    if spec.rerank:  # load the chat model before timing (the first load reads ~1 GB)
        from agent.models import achat_model

        await achat_model(services.settings.chat_model, services.settings, 0.0)


def _scores(ranked: list[str], qrels: dict[str, int], ms: float) -> dict:
    """One query's scores, latency and top ten."""
    return {
        "ndcg_at_10": round(ndcg_at_k(ranked, qrels, 10), 6),
        "recall_at_100": round(recall_at_k(ranked, qrels, 100), 6),
        "mrr_at_10": round(mrr_at_k(ranked, qrels, 10), 6),
        "ms": round(ms, 1),
        "top": ranked[:10],
    }


async def evaluate_mode(
    services: Services,
    scope: SearchScope,
    dataset: BeirDataset,
    by_document: dict[uuid.UUID, list[str]],
    spec: ModeSpec,
    *,
    depth: int = 100,
    limit: int | None = None,
    offset: int = 0,
    progress: Progress | None = None,
) -> ModeResult:
    """Run every query (or ``limit`` of them after the first ``offset``) through
    :func:`search` and score it."""
    options = SearchOptions(
        k=depth,
        mode=spec.search_mode,
        threshold=None,
        expand=False,
        rerank=spec.rerank,
        diversify=spec.diversify,
        use_cache=False,
    )
    query_ids = list(dataset.queries)[offset:][: limit or None]
    await _warm(services, scope, spec)
    per_query: dict[str, dict] = {}
    latencies: list[float] = []
    documents: list[int] = []
    timed_out = failures = 0
    stage = f"query:{spec.name}"
    if progress:
        progress(stage, 0, len(query_ids))
    for n, qid in enumerate(query_ids, start=1):
        started = time.perf_counter()
        result = await search(services, scope, dataset.queries[qid], options)
        ms = (time.perf_counter() - started) * 1000
        ranked = rank_documents([c.record.document_id for c in result.chunks], by_document)
        per_query[qid] = _scores(ranked, dataset.qrels[qid], ms)
        latencies.append(ms)
        documents.append(len(ranked))
        timed_out += int(result.metrics.timed_out)
        failures += int(bool(result.metrics.failures))
        if progress:
            progress(stage, n, len(query_ids))
    scores = list(per_query.values())
    return ModeResult(
        mode=spec.name,
        queries=len(query_ids),
        ndcg_at_10=round(mean([s["ndcg_at_10"] for s in scores]), 4),
        recall_at_100=round(mean([s["recall_at_100"] for s in scores]), 4),
        mrr_at_10=round(mean([s["mrr_at_10"] for s in scores]), 4),
        latency_p50_ms=round(percentile(latencies, 50), 1),
        latency_p95_ms=round(percentile(latencies, 95), 1),
        latency_mean_ms=round(mean(latencies), 1),
        documents_per_query=round(mean(documents), 1),
        timed_out=timed_out,
        failures=failures,
        per_query=per_query,
    )
