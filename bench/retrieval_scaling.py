"""How retrieval's cost grows with the library (``quire bench retrieval --sizes 10k,100k,1m``).

One database (``quire_bench_scale``) holds one library per size, each owned by its own user,
all at once: the 10k library is searched beside 1.1M other chunks, as a small user on a
shared server is. The libraries are built smallest first; after each, the HNSW index is
rebuilt over every vector then in the database (timed, with its size), so the build figures
grow 10k -> 110k -> 1.11M vectors. Rows and vectors are made as in :mod:`bench.retrieval`
(book sentences; vectors mixed from real MiniLM vectors of a pool of sentences, so 1M
chunks need no 3-hour embedding). Then each library is timed by :func:`bench_retrieval` on
the same questions, and the in-memory BM25 copy of each is loaded in a fresh index cache so
its load time and memory are its own. ``--vocabulary growing`` builds libraries whose
vocabulary grows with them (their own database, :mod:`bench.retrieval_corpus`).
"""

from __future__ import annotations

import re
import resource
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import text

from agent.retrieval.keyword_indexes import KeywordIndexes
from agent.services import Services
from bench.progress import Log, quiet
from bench.retrieval import RetrievalFigures, bench_retrieval
from bench.retrieval_build import BuildFigures, ensure_corpus
from bench.retrieval_corpus import CorpusSpec, Vocabulary
from bench.retrieval_database import (
    GROWING_SCALE_DATABASE,
    HNSW_INDEX,
    SCALE_DATABASE,
    open_bench_services,
)

HYBRID_P95_MAX_MS = 30.0
"""Goal: hybrid p95 at the largest size, query embedding included."""
HYBRID_GROWTH_MAX = 2.0
"""Goal: hybrid p95 at the largest size over its p95 at the smallest."""
SQL_BM25_P95_MAX_MS = 100.0
"""Goal: SQL BM25 p95 at the largest size (when the memory copy is over its budget)."""

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([km]?)\s*$", re.I)
_UNITS = {"": 1, "k": 1_000, "m": 1_000_000}


def parse_sizes(value: str) -> list[int]:
    """``"10k,100k,1m"`` -> ``[10000, 100000, 1000000]`` (sorted, duplicates dropped)."""
    sizes = set()
    for part in value.split(","):
        match = _SIZE.match(part)
        if not match:
            raise ValueError(f"not a size: {part!r} (use e.g. 10k, 250000, 1m)")
        size = int(float(match.group(1)) * _UNITS[match.group(2).lower()])
        if size < 100:
            raise ValueError(f"a library of {size} chunks is too small to time")
        sizes.add(size)
    return sorted(sizes)


def size_label(size: int) -> str:
    """``1000000`` -> ``1m``, ``10000`` -> ``10k``."""
    for unit, factor in (("m", 1_000_000), ("k", 1_000)):
        if size >= factor and size % factor == 0:
            return f"{size // factor}{unit}"
    return str(size)


def size_spec(
    size: int,
    prefix: str = "bench-scale",
    pool_size: int = 2_000,
    vocabulary: Vocabulary = "books",
    topic_chunks: int = CorpusSpec.topic_chunks,
) -> CorpusSpec:
    """One user owning ``size`` child chunks (the other sizes' users are the crowd)."""
    return CorpusSpec(
        target_chunks=size,
        other_chunks=0,
        users=1,
        pool_size=pool_size,
        user_prefix=f"{prefix}-{size_label(size)}",
        vocabulary=vocabulary,
        topic_chunks=topic_chunks,
    )


def scale_database(vocabulary: Vocabulary) -> str:
    """The database of ``--sizes`` libraries of this vocabulary."""
    return GROWING_SCALE_DATABASE if vocabulary == "growing" else SCALE_DATABASE


@dataclass
class SizePoint:
    """One library size's build and search figures."""

    chunks: int
    build: BuildFigures
    index_vectors: int
    """Vectors in the database when the HNSW index was last built (this size and smaller)."""
    index_mb: float
    """The HNSW index's size on disk after that build (reused libraries: its size now, over
    every vector in the database)."""
    search: RetrievalFigures
    rss_mib: float
    """Resident memory of this process after timing this size (its BM25 copy loaded)."""
    bm25_memory_mib: float
    """The in-memory BM25 copy's arrays (postings, chunk ids and lengths)."""


@dataclass
class ScalingFigures:
    """Everything ``quire bench retrieval --sizes`` prints and stores."""

    database: str
    vectors_in_database: int
    points: list[SizePoint]
    goals: dict[str, dict] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def p95(self, operation: str) -> list[float]:
        """The operation's p95 ms at each size, smallest first."""
        return [p.search.latency(operation).p95_ms for p in self.points]


async def _vectors(services: Services) -> int:
    async with services.engine.connect() as conn:
        return int(
            (
                await conn.execute(
                    text("SELECT count(*) FROM child_chunks WHERE embedding IS NOT NULL")
                )
            ).scalar()
        )


async def _index_mb(services: Services) -> float:
    async with services.engine.connect() as conn:
        size = (
            await conn.execute(
                text("SELECT coalesce(pg_relation_size(to_regclass(:n)), 0)"), {"n": HNSW_INDEX}
            )
        ).scalar()
    return round(int(size) / 2**20, 1)


def _rss_mib() -> float:
    """Resident memory now (``/proc``), else the peak (``getrusage``)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _copy_mib(indexes: KeywordIndexes) -> float:
    """Bytes of the in-memory BM25 arrays every reader holds, in MiB."""
    return round(indexes.nbytes() / 2**20, 1)


async def build_sizes(
    services: Services, specs: list[CorpusSpec], rebuild: bool, rebuild_index: bool, log: Log
) -> list[tuple[BuildFigures, int, float]]:
    """Build (or reuse) each size's library, smallest first, rebuilding HNSW after each
    (``rebuild_index``; only in a benchmark database: otherwise the index stays and grows).

    Returns ``(build figures, vectors indexed by that build, index MiB)`` per size.
    """
    built = []
    loaded = 0
    for spec in specs:
        log(f"library of {size_label(spec.target_chunks)} chunks...")
        build = await ensure_corpus(
            services, spec, rebuild, index_during_load=not rebuild_index, log=log
        )
        loaded += spec.target_chunks
        # a library built by an earlier run was indexed with the smaller ones before it
        vectors = loaded if build.reused else await _vectors(services)
        built.append((build, vectors, await _index_mb(services)))
    return built


async def bench_sizes(
    services: Services,
    sizes: list[int],
    queries: int,
    rebuild: bool = False,
    log: Log = quiet,
    *,
    rebuild_index: bool = True,
    prefix: str = "bench-scale",
    pool_size: int = 2_000,
    warmup: int = 20,
    vocabulary: Vocabulary = "books",
    topic_chunks: int = CorpusSpec.topic_chunks,
) -> ScalingFigures:
    """Build every size, then time each library on the same questions."""
    specs = [size_spec(size, prefix, pool_size, vocabulary, topic_chunks) for size in sizes]
    built = await build_sizes(services, specs, rebuild, rebuild_index, log)
    points = []
    for spec, (build, vectors, index_mb) in zip(specs, built, strict=True):
        size = spec.target_chunks
        log(f"timing the {size_label(size)} library...")
        # a fresh copy cache per size: its BM25 load time and memory are this size's own
        await services.keyword_indexes.close()
        services.keyword_indexes = KeywordIndexes(
            services.settings.bm25_memory_max_postings, services.settings.bm25_memory_sync_tokens
        )
        figures = await bench_retrieval(
            services, spec, queries, log=log, crowd=0, warmup=warmup, index_during_load=True
        )
        figures.build = build
        points.append(
            SizePoint(
                chunks=size,
                build=build,
                index_vectors=vectors,
                index_mb=index_mb,
                search=figures,
                rss_mib=_rss_mib(),
                bm25_memory_mib=_copy_mib(services.keyword_indexes),
            )
        )
    result = ScalingFigures(
        database=points[0].search.database if points else "",
        vectors_in_database=await _vectors(services),
        points=points,
        notes=[
            "one database holds every size's library at once, each owned by its own user",
            "chunk text: runs of book sentences; vectors: normalized mixes of real MiniLM "
            "vectors of 2,000 book sentences (anchor + 0.4 x another + noise)",
            _vocabulary_note(specs[0] if specs else CorpusSpec()),
            "HNSW rebuilt after each size is loaded, over every vector then in the database",
            "single client, queries one after another, warm caches (pg_prewarm)",
        ],
    )
    result.goals = scaling_goals(result)
    return result


def _vocabulary_note(spec: CorpusSpec) -> str:
    if spec.vocabulary == "growing":
        return (
            f"vocabulary growing: topics of {spec.topic_chunks:,} chunks; names and rarer "
            f"words spelled per topic, the {spec.shared_words:,} commonest lower-case words "
            "shared (the first topic is the books' own text)"
        )
    return "vocabulary of the two books at every size (every word common: BM25's worst case)"


def scaling_goals(figures: ScalingFigures) -> dict[str, dict]:
    """The issue's goals against the smallest and largest sizes."""
    if not figures.points:
        return {}
    hybrid, sql = figures.p95("hybrid"), figures.p95("keyword_sql")
    growth = round(hybrid[-1] / hybrid[0], 2) if hybrid[0] else float("inf")
    return {
        "hybrid_p95_largest_ms": {
            "value": hybrid[-1],
            "goal": HYBRID_P95_MAX_MS,
            "met": hybrid[-1] <= HYBRID_P95_MAX_MS,
        },
        "hybrid_p95_growth": {
            "value": growth,
            "goal": HYBRID_GROWTH_MAX,
            "met": growth <= HYBRID_GROWTH_MAX,
        },
        "sql_bm25_p95_largest_ms": {
            "value": sql[-1],
            "goal": SQL_BM25_P95_MAX_MS,
            "met": sql[-1] <= SQL_BM25_P95_MAX_MS,
        },
    }


PLOTTED = ("hybrid", "hybrid_search", "dense", "keyword", "keyword_sql", "raw_candidates")


def draw_scaling_chart(figures: ScalingFigures, path: Path) -> Path:
    """p95 ms of each operation against library size, log-log, with the goals drawn."""
    from bench.charts import new_chart, save_chart

    fig, ax = new_chart((7.5, 4.8))
    sizes = [p.chunks for p in figures.points]
    for operation in PLOTTED:
        ax.plot(sizes, figures.p95(operation), marker="o", label=operation)
    ax.axhline(HYBRID_P95_MAX_MS, color="grey", linestyle="--", linewidth=0.8)
    ax.annotate("hybrid goal", (sizes[0], HYBRID_P95_MAX_MS), fontsize=8, color="grey")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("child chunks in the library")
    ax.set_ylabel("p95 ms")
    ax.set_title(f"Retrieval p95 against library size ({figures.vectors_in_database:,} vectors)")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", linewidth=0.3)
    return save_chart(fig, path)


async def run_scaling_bench(
    sizes: list[int],
    queries: int = 200,
    rebuild: bool = False,
    log: Log = quiet,
    vocabulary: Vocabulary = "books",
) -> tuple[ScalingFigures, Path]:
    """``quire bench retrieval --sizes``: the benchmark in its own database (one per
    vocabulary); figures and the data folder."""
    services = await open_bench_services(rebuild, database=scale_database(vocabulary))
    try:
        figures = await bench_sizes(
            services, sizes, queries, rebuild=False, log=log, vocabulary=vocabulary
        )
        return figures, services.settings.data_dir
    finally:
        await services.close()
