"""Retrieval quality on a BEIR-format test set (``quire eval retrieval``).

The corpus is indexed through the real ingestion code (one pasted-text document per
abstract: ``title + "\\n\\n" + text``) as one user in a dedicated corpus, and every test
query goes through the real :func:`agent.retrieval.search.search` pipeline. Chunks come
back best first; a document ranks where its best chunk ranks. Scores are the BEIR
definitions of :mod:`bench.metrics`.

The mapping from our document ids to BEIR ids is kept in a JSON cache under
``$QUIRE_HOME/eval/`` so that a rerun skips re-ingesting (re-ingesting would only report
duplicates, but re-parsing thousands of documents still costs time).
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from sqlalchemy import text as sql
from sqlalchemy.engine import make_url

from agent.db.scope import SearchScope
from agent.ingest.sources import IngestRequest, ingest_source
from agent.library.accounts import resolve_user
from agent.retrieval.search import SearchMode, SearchOptions, search
from agent.services import Services
from bench.metrics import mean, mrr_at_k, ndcg_at_k, percentile, recall_at_k

Progress = Callable[[str, int, int], None]
"""Called as ``progress(stage, done, total)``; stages: ``index`` and ``query:<mode>``."""

PUBLISHED: list[dict] = [
    # ../shared/data/README.md: published nDCG@10 on BEIR SciFact (test)
    {"method": "BM25 (Anserini, multifield)", "kind": "bm25", "ndcg_at_10": 0.6647},
    {"method": "BM25 (Anserini, flat)", "kind": "bm25", "ndcg_at_10": 0.6789},
    {"method": "all-MiniLM-L6-v2 (dense)", "kind": "dense", "ndcg_at_10": 0.6451},
    {"method": "all-mpnet-base-v2 (dense)", "kind": "dense", "ndcg_at_10": 0.6557},
    {"method": "BGE-base-en-v1.5 (dense)", "kind": "dense", "ndcg_at_10": 0.7408},
    {"method": "RRF BM25 + BGE-base (k=60)", "kind": "hybrid", "ndcg_at_10": 0.7420},
]

TARGETS: dict[str, float] = {"bm25": 0.66, "dense": 0.64, "hybrid": 0.70}
"""nDCG@10 each mode should reach with the local embedder (all-MiniLM-L6-v2 int8)."""


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

SETTINGS_REPORTED = (
    "embedding_model",
    "embed_max_tokens",
    "user_chunk_min_chars",
    "user_chunk_max_chars",
    "user_overlap_sentences",
    "rrf_k",
    "vector_weight",
    "keyword_weight",
    "candidates_per_retriever",
    "bm25_k1",
    "bm25_b",
    "hnsw_ef_search",
    "max_children_per_parent",
    "mmr_lambda",
    "mmr_pool_factor",
    "rerank_candidates",
    "retrieval_timeout_seconds",
    "chat_model",
)


# --- the data set -----------------------------------------------------------------------------


@dataclass
class BeirDataset:
    """A BEIR folder: corpus (id -> title, text), the split's queries and their qrels."""

    name: str
    corpus: dict[str, tuple[str, str]]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]

    def document_text(self, doc_id: str) -> str:
        """What gets indexed for one document: title, blank line, text."""
        title, body = self.corpus[doc_id]
        return f"{title}\n\n{body}" if title.strip() else body


def _read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def load_beir(folder: Path, split: str = "test") -> BeirDataset:
    """Read ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv`` from ``folder``.

    Only queries judged in the split are kept, in the order the qrels list them.
    """
    folder = Path(folder)
    corpus = {
        str(d["_id"]): (str(d.get("title") or ""), str(d.get("text") or ""))
        for d in _read_jsonl(folder / "corpus.jsonl")
    }
    all_queries = {str(q["_id"]): str(q["text"]) for q in _read_jsonl(folder / "queries.jsonl")}
    qrels: dict[str, dict[str, int]] = {}
    with (folder / "qrels" / f"{split}.tsv").open(encoding="utf-8") as fh:
        for line in fh:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 3 or parts[0] == "query-id":
                continue
            qid, did, score = parts[0], parts[1], int(float(parts[2]))
            qrels.setdefault(qid, {})[did] = score
    queries = {qid: all_queries[qid] for qid in qrels if qid in all_queries}
    return BeirDataset(folder.name, corpus, queries, {q: qrels[q] for q in queries})


def write_beir_subset(
    source: Path,
    out: Path,
    *,
    queries: int,
    distractors: int,
    split: str = "test",
    seed: int = 13,
) -> Path:
    """A smaller BEIR folder in ``out``: the split's first ``queries`` judged queries, every
    document judged for them, and ``distractors`` other documents drawn with ``seed``.

    Scores on it are higher than on the whole corpus (fewer competitors); it exists so a
    short run (CI, ``quire bench --quick``) can still catch a quality regression.
    """
    import random

    data = load_beir(source, split)
    chosen = list(data.queries)[:queries]
    judged = {d for q in chosen for d in data.qrels[q] if d in data.corpus}
    others = sorted(set(data.corpus) - judged)
    picked = judged | set(random.Random(seed).sample(others, min(distractors, len(others))))
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    with (out / "corpus.jsonl").open("w", encoding="utf-8") as fh:
        for doc_id in sorted(picked):
            title, body = data.corpus[doc_id]
            fh.write(json.dumps({"_id": doc_id, "title": title, "text": body}) + "\n")
    with (out / "queries.jsonl").open("w", encoding="utf-8") as fh:
        for qid in chosen:
            fh.write(json.dumps({"_id": qid, "text": data.queries[qid]}) + "\n")
    with (out / "qrels" / f"{split}.tsv").open("w", encoding="utf-8") as fh:
        fh.write("query-id\tcorpus-id\tscore\n")
        for qid in chosen:
            for doc_id, grade in data.qrels[qid].items():
                fh.write(f"{qid}\t{doc_id}\t{grade}\n")
    return out


# --- indexing ---------------------------------------------------------------------------------


@dataclass
class IndexInfo:
    """How the corpus got into the index."""

    documents: int
    chunks: int = 0
    ingested: int = 0
    duplicates: int = 0
    failed: list[str] = field(default_factory=list)
    seconds: float = 0.0
    """This run's indexing time (checking the cache only, when nothing was missing)."""
    from_cache: bool = False
    indexed_seconds: float | None = None
    """How long the indexing run that built the cached index took."""
    doc_types: dict[str, int] = field(default_factory=dict)
    """Ingestion's document type per abstract (USER, SENSITIVE, FAQ, BOOK)."""


async def _ready_documents(
    services: Services, user_id: uuid.UUID, corpus: str
) -> dict[uuid.UUID, tuple[str, int]]:
    """The user's ready documents in ``corpus``: id -> (doc type, chunk count)."""
    async with services.engine.connect() as conn:
        rows = await conn.execute(
            sql(
                "SELECT d.id, d.doc_type, (SELECT count(*) FROM child_chunks c "
                "WHERE c.document_id = d.id) AS chunks FROM documents d "
                "WHERE d.user_id = :u AND d.corpus = :c AND d.status = 'ready'"
            ),
            {"u": user_id, "c": corpus},
        )
        return {r.id: (r.doc_type, int(r.chunks)) for r in rows}


def _load_cache(path: Path | None) -> dict:
    if path is None or not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


async def index_corpus(
    services: Services,
    user_id: uuid.UUID,
    dataset: BeirDataset,
    corpus: str,
    *,
    cache_path: Path | None = None,
    concurrency: int = 2,
    progress: Progress | None = None,
) -> tuple[dict[uuid.UUID, list[str]], IndexInfo]:
    """Ingest every corpus document not yet indexed; return document id -> BEIR ids.

    Documents whose cached id is still stored are skipped. Identical texts are one document
    (ingestion reports the second as a duplicate), so one id may stand for several BEIR ids.
    """
    started = time.perf_counter()
    stored = await _ready_documents(services, user_id, corpus)
    cached = _load_cache(cache_path)
    mapping: dict[str, str] = {
        str(beir): str(doc)
        for beir, doc in dict(cached.get("mapping") or {}).items()
        if beir in dataset.corpus and _as_uuid(doc) in stored
    }
    todo = [beir for beir in dataset.corpus if beir not in mapping]
    info = IndexInfo(documents=len(dataset.corpus), from_cache=not todo)
    if not todo:
        info.indexed_seconds = cached.get("index_seconds")
    total, done = len(dataset.corpus), len(mapping)
    if progress:
        progress("index", done, total)
    queue: asyncio.Queue[str] = asyncio.Queue()
    for beir in todo:
        queue.put_nowait(beir)

    async def worker() -> None:
        nonlocal done
        while not queue.empty():
            beir = queue.get_nowait()
            title = dataset.corpus[beir][0].strip() or f"{dataset.name} {beir}"
            request = IngestRequest(text=dataset.document_text(beir), title=title, corpus=corpus)
            try:
                result = await ingest_source(services, user_id, request)
            except Exception as exc:  # one unreadable abstract must not stop the run
                info.failed.append(f"{beir}: {type(exc).__name__}: {exc}")
            else:
                mapping[beir] = str(result.document_id)
                if result.status == "duplicate":
                    info.duplicates += 1
                else:
                    info.ingested += 1
            done += 1
            if progress:
                progress("index", done, total)

    try:
        await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))
    finally:  # an interrupted run keeps what it indexed
        info.seconds = round(time.perf_counter() - started, 2)
        if todo:
            info.indexed_seconds = info.seconds
        if cache_path is not None and todo:
            cache_path.parent.mkdir(parents=True, exist_ok=True)
            cache_path.write_text(
                json.dumps(
                    {
                        "dataset": dataset.name,
                        "corpus": corpus,
                        "user_id": str(user_id),
                        "embedding_model": services.embeddings.name,
                        "index_seconds": info.seconds,
                        "mapping": mapping,
                    },
                    indent=1,
                )
            )
    stored = await _ready_documents(services, user_id, corpus)
    by_document: dict[uuid.UUID, list[str]] = {}
    for beir, doc in mapping.items():
        by_document.setdefault(uuid.UUID(doc), []).append(beir)
    info.chunks = sum(stored[d][1] for d in by_document if d in stored)
    info.doc_types = dict(Counter(stored[d][0] for d in by_document if d in stored))
    return by_document, info


def _as_uuid(raw: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(raw)
    except (TypeError, ValueError):
        return None


# --- evaluation -------------------------------------------------------------------------------


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
    if spec.search_mode != "dense" and services.settings.bm25_memory_index:
        # load the in-memory BM25 copy before timing, as a running server has it
        await services.keyword_indexes.warm(services.engine, scope)
    if spec.rerank:  # load the chat model before timing (the first load reads ~1 GB)
        from agent.models import achat_model

        await achat_model(services.settings.chat_model, services.settings, 0.0)
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
        qrels = dataset.qrels[qid]
        per_query[qid] = {
            "ndcg_at_10": round(ndcg_at_k(ranked, qrels, 10), 6),
            "recall_at_100": round(recall_at_k(ranked, qrels, 100), 6),
            "mrr_at_10": round(mrr_at_k(ranked, qrels, 10), 6),
            "ms": round(ms, 1),
            "top": ranked[:10],
        }
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


@dataclass
class EvalReport:
    """Everything one ``quire eval retrieval`` run measured."""

    dataset: str
    split: str
    corpus: str
    user: str
    database: str
    depth: int
    settings: dict
    index: IndexInfo
    modes: list[ModeResult]
    split_queries: int = 0
    """Judged queries in the split (a mode evaluated on fewer has no target verdict)."""
    published: list[dict] = field(default_factory=lambda: [dict(p) for p in PUBLISHED])
    targets: dict[str, float] = field(default_factory=lambda: dict(TARGETS))

    def target_met(self, mode: str) -> bool | None:
        """Whether ``mode`` reached its nDCG@10 target over the whole split (``None``: no
        target for it, or only part of the queries were evaluated)."""
        target = TARGETS.get(mode)
        row = next((m for m in self.modes if m.mode == mode), None)
        if target is None or row is None or row.queries < self.split_queries:
            return None
        return row.ndcg_at_10 >= target

    def as_dict(self, per_query: bool = True) -> dict:
        """JSON-ready form; ``per_query=False`` drops the per-query scores."""
        data = asdict(self)
        for mode in data["modes"]:
            mode["target"] = TARGETS.get(mode["mode"])
            mode["target_met"] = self.target_met(mode["mode"])
            if not per_query:
                mode.pop("per_query", None)
        return data


async def run_retrieval_eval(
    services: Services,
    dataset_path: Path,
    *,
    user: str = "scifact-eval",
    corpus: str = "scifact",
    modes: Sequence[str] = ("bm25", "dense", "hybrid"),
    split: str = "test",
    depth: int = 100,
    limit: int | None = None,
    offset: int = 0,
    concurrency: int = 2,
    cache_dir: Path | None = None,
    progress: Progress | None = None,
) -> EvalReport:
    """Index ``dataset_path`` for ``user`` (if needed) and evaluate each mode in ``modes``.

    ``cache_dir`` holds the document-id mapping (default ``$QUIRE_HOME/eval``).
    """
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        raise ValueError(f"unknown mode(s) {', '.join(unknown)}: use {', '.join(MODES)}")
    dataset = load_beir(dataset_path, split)
    owner = await resolve_user(services, user)
    folder = cache_dir or services.settings.data_dir / "eval"
    database = make_url(services.urls.sqlalchemy).database or ""
    cache = folder / f"index-{_slug(database)}-{_slug(user)}-{_slug(corpus)}.json"
    by_document, info = await index_corpus(
        services,
        owner.id,
        dataset,
        corpus,
        cache_path=cache,
        concurrency=concurrency,
        progress=progress,
    )
    scope = SearchScope(user_id=owner.id, corpus=corpus, include_shared=False)
    results = [
        await evaluate_mode(
            services,
            scope,
            dataset,
            by_document,
            MODES[m],
            depth=depth,
            limit=limit,
            offset=offset,
            progress=progress,
        )
        for m in modes
    ]
    settings = services.settings
    return EvalReport(
        dataset=dataset.name,
        split=split,
        corpus=corpus,
        user=user,
        database=database,
        depth=depth,
        settings={name: getattr(settings, name) for name in SETTINGS_REPORTED},
        index=info,
        modes=results,
        split_queries=len(dataset.queries),
    )


def _slug(value: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in value)[:60] or "x"


# --- output -----------------------------------------------------------------------------------


def plot_report(report: EvalReport, path: Path) -> Path:
    """A bar chart of nDCG@10 per mode with the published baselines as reference lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(11, 5))
    names = [m.mode for m in report.modes]
    values = [m.ndcg_at_10 for m in report.modes]
    colors = {"bm25": "#4c72b0", "dense": "#dd8452", "hybrid": "#55a868"}
    bars = ax.bar(
        names, values, color=[colors.get(n, "#8fbf9a") for n in names], width=0.6, zorder=2
    )
    for bar, value, mode in zip(bars, values, report.modes, strict=True):
        ax.annotate(
            f"{value:.4f}\nn={mode.queries}",
            (bar.get_x() + bar.get_width() / 2, value - 0.004),
            ha="center",
            va="top",
            fontsize=8,
            color="white",
            fontweight="bold",
            zorder=4,
        )
    styles = {"bm25": ":", "dense": "--", "hybrid": "-."}
    cmap = plt.get_cmap("tab10")
    for i, pub in enumerate(report.published):
        ax.axhline(
            pub["ndcg_at_10"],
            linestyle=styles.get(pub["kind"], ":"),
            color=cmap(i),
            linewidth=1.2,
            label=f"{pub['method']}: {pub['ndcg_at_10']:.4f}",
            zorder=3,
        )
    every = [*values, *(p["ndcg_at_10"] for p in report.published)]
    low, high = (min(every), max(every)) if every else (0.0, 1.0)
    ax.set_ylim(max(0.0, low - 0.1), min(1.0, high + 0.05))  # zoomed: bars do not start at 0
    ax.set_ylabel("nDCG@10 (axis zoomed)")
    ax.set_title(f"Quire retrieval on BEIR {report.dataset} ({report.split}) vs published")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), title="published")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def write_report(report: EvalReport, folder: Path, name: str = "retrieval") -> tuple[Path, Path]:
    """``<folder>/<name>.json`` (via :func:`bench.common.write_results`) and the PNG."""
    from bench.common import write_results

    json_path = write_results(name, report.as_dict(), folder)
    png_path = plot_report(report, folder / f"{name}.png")
    return json_path, png_path
