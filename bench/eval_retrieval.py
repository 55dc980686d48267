"""Retrieval quality on a BEIR-format test set (``quire eval retrieval``).

The corpus is indexed through the real ingestion code (one pasted-text document per
abstract: ``title + "\\n\\n" + text``) as one user in a dedicated corpus, and every test
query goes through the real :func:`agent.retrieval.search.search` pipeline. Chunks come
back best first; a document ranks where its best chunk ranks. Scores are the BEIR
definitions of :mod:`bench.metrics`.

The mapping from our document ids to BEIR ids is kept in a JSON cache under
``$QUIRE_HOME/eval/`` so that a rerun skips re-ingesting (re-ingesting would only report
duplicates, but re-parsing thousands of documents still costs time).

Here: the published baselines and targets, the run and its report (JSON and chart). The
data set is :mod:`bench.eval_retrieval_data`, indexing :mod:`bench.eval_retrieval_index`,
the modes and their scoring :mod:`bench.eval_retrieval_modes`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from sqlalchemy.engine import make_url

from agent.db.scope import SearchScope
from agent.library.accounts import resolve_user
from agent.services import Services
from bench.charts import new_chart, save_chart, write_figures_and_chart
from bench.eval_retrieval_data import BeirDataset, load_beir, write_beir_subset
from bench.eval_retrieval_index import IndexInfo, index_corpus
from bench.eval_retrieval_modes import MODES, ModeResult, ModeSpec, evaluate_mode, rank_documents
from bench.progress import Progress

__all__ = [
    "MODES",
    "PUBLISHED",
    "SETTINGS_REPORTED",
    "TARGETS",
    "BeirDataset",
    "EvalReport",
    "IndexInfo",
    "ModeResult",
    "ModeSpec",
    "Progress",
    "evaluate_mode",
    "index_corpus",
    "load_beir",
    "plot_report",
    "rank_documents",
    "run_retrieval_eval",
    "write_beir_subset",
    "write_report",
]

PUBLISHED: list[dict] = [
    # ../shared/data/README.md: published nDCG@10 on BEIR SciFact (test)
    {"method": "BM25 (Anserini, multifield)", "kind": "bm25", "ndcg_at_10": 0.6647},
    {"method": "BM25 (Anserini, flat)", "kind": "bm25", "ndcg_at_10": 0.6789},
    {"method": "all-MiniLM-L6-v2 (dense)", "kind": "dense", "ndcg_at_10": 0.6451},
    {"method": "all-mpnet-base-v2 (dense)", "kind": "dense", "ndcg_at_10": 0.6557},
    {"method": "BGE-base-en-v1.5 (dense)", "kind": "dense", "ndcg_at_10": 0.7408},
    {"method": "RRF BM25 + BGE-base (k=60)", "kind": "hybrid", "ndcg_at_10": 0.7420},
]

TARGETS: dict[str, float] = {"bm25": 0.66, "dense": 0.64, "hybrid": 0.72}
"""nDCG@10 each mode should reach with the local embedder (all-MiniLM-L6-v2 int8)."""

SETTINGS_REPORTED = (
    "embedding_model",
    "embed_max_tokens",
    "user_chunk_min_chars",
    "user_chunk_max_chars",
    "user_overlap_sentences",
    "fusion",
    "fusion_drop_depth",
    "fusion_min_share",
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


def plot_report(report: EvalReport, path: Path) -> Path:
    """A bar chart of nDCG@10 per mode with the published baselines as reference lines."""
    fig, ax = new_chart((11, 5))
    import matplotlib.pyplot as plt  # after new_chart, which picks the backend

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
    return save_chart(fig, path)


def write_report(report: EvalReport, folder: Path, name: str = "retrieval") -> tuple[Path, Path]:
    """``<folder>/<name>.json`` (via :func:`bench.common.write_results`) and the PNG."""
    return write_figures_and_chart(
        name, report.as_dict(), folder, lambda path: plot_report(report, path)
    )
