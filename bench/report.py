"""``quire bench``: every benchmark in one run, and one Markdown report of all their figures.

The report holds ingestion throughput, retrieval latency (with the raw pgvector query),
answer latency per chat path, the HTTP load run, retrieval quality on SciFact and answer
quality on our own questions, each beside its target, and the machine and commit it ran on.
Each benchmark runs in its own database (``--quick`` runs use ``*_quick`` ones), so the
user's documents are never touched; one that fails is reported as failed and the rest go on.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.common import QUICK_SUFFIX, SHARED_DATA, database_settings, machine

Log = Callable[[str], None]

ROOT = Path(__file__).resolve().parent.parent
ANSWERS_DATASET = ROOT / "tests" / "data" / "answers.jsonl"
SCIFACT = SHARED_DATA / "scifact"
BENCHMARKS = ("ingest", "retrieval", "answers", "load", "eval-retrieval", "eval-answers")
TITLES = {
    "ingest": "Ingestion",
    "retrieval": "Retrieval latency",
    "answers": "Answer latency per chat path",
    "load": "HTTP load",
    "eval-retrieval": "Retrieval quality (SciFact)",
    "eval-answers": "Answer quality (our questions)",
}


def _quiet(_: str) -> None:
    pass


@dataclass
class BenchPlan:
    """What one ``quire bench`` run measures, and how big."""

    model: str = "local"
    """Chat model of the answer benchmarks (``extractive``: no model, plumbing only)."""
    quick: bool = False
    skip: frozenset[str] = frozenset()
    ingest_files: list[Path] | None = None
    """``None``: the ingest benchmark's defaults (Pride and Prejudice and a PDF textbook)."""
    retrieval_chunks: int = 100_000
    retrieval_queries: int = 200
    retrieval_pool: int | None = None
    """Sentences embedded for the synthetic corpus (``None``: its default)."""
    load_clients: int = 50
    load_seconds: float = 60.0
    load_model: str = "extractive"
    eval_slice: tuple[int, int] | None = None
    """``(queries, distractors)``: a SciFact slice instead of the whole corpus."""
    eval_modes: tuple[str, ...] = ("bm25", "dense", "hybrid", "hybrid-mmr")
    answers_stride: int = 1
    """Ask every n-th question of the answers dataset (1: all)."""

    @classmethod
    def quick_plan(cls, model: str = "extractive", **changes: Any) -> BenchPlan:
        """Minutes, not an hour: small corpora, a short load, a SciFact slice, 9 questions."""
        values: dict[str, Any] = {
            "model": model,
            "quick": True,
            "ingest_files": [SHARED_DATA / "books" / "alice-in-wonderland.txt"],
            "retrieval_chunks": 10_000,
            "retrieval_queries": 50,
            "load_clients": 10,
            "load_seconds": 10.0,
            "eval_slice": (30, 200),
            "eval_modes": ("bm25", "dense", "hybrid"),
            "answers_stride": 8,
        }
        values.update(changes)
        return cls(**values)

    def database(self, name: str) -> str:
        """A benchmark's database name, ``_quick`` for quick runs."""
        return name + (QUICK_SUFFIX if self.quick else "")

    def result_name(self, name: str) -> str:
        """A results file stem: quick runs never overwrite a full run's figures."""
        return name + ("-quick" if self.quick else "")

    def as_dict(self) -> dict:
        """The plan as JSON-ready data."""
        data = asdict(self)
        data["skip"] = sorted(self.skip)
        data["ingest_files"] = [p.name for p in self.ingest_files or []] or "default"
        return data


@dataclass
class Section:
    """One benchmark's outcome: its JSON figures, or why it failed."""

    name: str
    seconds: float = 0.0
    results: Any = None
    error: str | None = None
    skipped: bool = False
    written: list[str] = field(default_factory=list)


# --- running ----------------------------------------------------------------------------------


async def _ingest(plan: BenchPlan, log: Log) -> tuple[Any, list[str]]:
    from agent.services import open_services
    from bench.common import bench_ingest, write_results

    services = await open_services(database_settings(plan.database("quire_bench_ingest")))
    try:
        figures = await bench_ingest(services, plan.ingest_files)
        written = write_results(
            plan.result_name("ingest"), figures, services.settings.data_dir / "bench"
        )
    finally:
        await services.close()
    return [asdict(f) for f in figures], [str(written)]


async def _retrieval(plan: BenchPlan, log: Log) -> tuple[Any, list[str]]:
    from bench.common import write_results
    from bench.retrieval import BENCH_DATABASE, run_retrieval_bench

    figures, data_dir = await run_retrieval_bench(
        plan.retrieval_queries,
        plan.retrieval_chunks,
        log=log,
        database=plan.database(BENCH_DATABASE),
        pool_size=plan.retrieval_pool,
    )
    payload = asdict(figures)
    return payload, [str(write_results(plan.result_name("retrieval"), payload, data_dir / "bench"))]


async def _answers(plan: BenchPlan, log: Log) -> tuple[Any, list[str]]:
    from bench.answers import BENCH_DATABASE, figures_json, run_answers_bench
    from bench.common import write_results

    figures, data_dir = await run_answers_bench(
        plan.model, log=log, database=plan.database(BENCH_DATABASE)
    )
    payload = figures_json(figures)
    return payload, [str(write_results(plan.result_name("answers"), payload, data_dir / "bench"))]


async def _load(plan: BenchPlan, log: Log) -> tuple[Any, list[str]]:
    from bench.common import write_results
    from bench.load import BENCH_DATABASE, LoadConfig, run_load_bench

    config = LoadConfig(clients=plan.load_clients, seconds=plan.load_seconds)
    figures, data_dir = await run_load_bench(
        config, model=plan.load_model, database=plan.database(BENCH_DATABASE), log=log
    )
    payload = figures.as_dict()
    return payload, [str(write_results(plan.result_name("load"), payload, data_dir / "bench"))]


async def _eval_retrieval(plan: BenchPlan, log: Log) -> tuple[Any, list[str]]:
    from agent.services import open_services
    from bench.eval_retrieval import run_retrieval_eval, write_beir_subset, write_report

    # the CLI's own default: the app's 3.5 s search budget is too tight for a whole eval
    settings = database_settings(plan.database("quire_eval")).model_copy(
        update={"retrieval_timeout_seconds": 60.0}
    )
    services = await open_services(settings)
    try:
        folder, corpus, user = SCIFACT, "scifact", "scifact-eval"
        if plan.eval_slice:
            queries, distractors = plan.eval_slice
            corpus = user = f"scifact-slice-{queries}-{distractors}"
            folder = write_beir_subset(
                SCIFACT,
                settings.data_dir / "eval" / corpus,
                queries=queries,
                distractors=distractors,
            )
        log(f"eval retrieval on {folder} ({', '.join(plan.eval_modes)})...")
        report = await run_retrieval_eval(
            services, folder, user=user, corpus=corpus, modes=plan.eval_modes
        )
        name = plan.result_name("retrieval")
        json_path, png_path = write_report(report, settings.data_dir / "eval", name)
    finally:
        await services.close()
    payload = report.as_dict(per_query=False)
    # the targets are for the whole corpus: a slice (fewer competitors) gets no verdict
    payload["target_verdicts"] = {
        m.mode: None if plan.eval_slice else report.target_met(m.mode) for m in report.modes
    }
    return payload, [str(json_path), str(png_path)]


async def _eval_answers(plan: BenchPlan, log: Log) -> tuple[Any, list[str]]:
    from agent.services import open_services
    from bench.eval_answers import evaluate_answers, load_dataset, write_report

    items = load_dataset(ANSWERS_DATASET)[:: plan.answers_stride]
    settings = database_settings(plan.database("quire_eval_answers"))
    services = await open_services(settings)
    try:
        report = await evaluate_answers(
            services, items, dataset=str(ANSWERS_DATASET), model=plan.model, log=log
        )
        name = plan.result_name("answers")
        json_path, png_path = write_report(report, settings.data_dir / "eval", name)
    finally:
        await services.close()
    return report.as_dict(), [str(json_path), str(png_path)]


RUNNERS: dict[str, Callable[[BenchPlan, Log], Awaitable[tuple[Any, list[str]]]]] = {
    "ingest": _ingest,
    "retrieval": _retrieval,
    "answers": _answers,
    "load": _load,
    "eval-retrieval": _eval_retrieval,
    "eval-answers": _eval_answers,
}


async def run_benchmarks(plan: BenchPlan, log: Log = _quiet) -> list[Section]:
    """Run every benchmark the plan does not skip, one after another; never raises for one."""
    sections: list[Section] = []
    for name in BENCHMARKS:
        if name in plan.skip:
            sections.append(Section(name, skipped=True))
            continue
        log(f"== {name}")
        began = time.perf_counter()
        try:
            results, written = await RUNNERS[name](plan, log)
            section = Section(name, results=results, written=written)
        except Exception as exc:  # one broken benchmark must not lose the others' figures
            log(traceback.format_exc())
            section = Section(name, error=f"{type(exc).__name__}: {exc}")
        section.seconds = round(time.perf_counter() - began, 1)
        sections.append(section)
    return sections


# --- the report -------------------------------------------------------------------------------


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value).replace("|", "\\|")


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub-flavoured Markdown table."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def _verdict(met: bool | None) -> str:
    return "-" if met is None else ("met" if met else "**not met**")


def _ingest_md(results: list[dict]) -> list[str]:
    rows = [
        [
            r["file"],
            r["chunks"],
            r["total_s"],
            r["parse_s"],
            r["chunk_s"],
            r["embed_s"],
            r["store_s"],
            r["chunks_per_s"],
            r["throughput_ratio"],
            _verdict(r["throughput_ratio"] >= 0.8),
        ]
        for r in results
    ]
    headers = ["file", "chunks", "total s", "parse", "chunk", "embed", "store", "chunks/s"]
    return [
        markdown_table([*headers, "pipeline/raw embedder", "target >= 0.8"], rows),
        "Stage columns are seconds; the ratio divides the raw embedder's time on the same "
        "chunks by the pipeline's.",
    ]


def _retrieval_md(r: dict) -> list[str]:
    b = r["build"]
    rows = [
        [f["operation"], f["p50_ms"], f["p95_ms"], f["mean_ms"], f["max_ms"]]
        for f in r["latencies"]
    ]
    hybrid_p95 = next(f["p95_ms"] for f in r["latencies"] if f["operation"] == "hybrid")
    lines = [
        f"Corpus: {b['child_chunks']} child chunks in {b['documents']} documents, "
        f"{r['corpus']['target_chunks']} of them the searching user's, among "
        f"{r['corpus']['users']} users; {r['queries']} queries, k {r['k']}.",
        markdown_table(["operation", "p50 ms", "p95 ms", "mean ms", "max ms"], rows),
        markdown_table(
            ["target", "figure", "verdict"],
            [
                [
                    f"hybrid p95 <= {r['hybrid_p95_target_ms']:g} ms",
                    f"{hybrid_p95} ms",
                    _verdict(r["meets_p95_target"]),
                ],
                [
                    f"hybrid search p95 <= {r['ratio_target']:g}x raw pgvector top-k "
                    "(both given the query vector, k the depth hybrid reads; the "
                    "embedding is shown apart)",
                    f"{r.get('search_over_raw_candidates_p95')}x (over raw top-{r.get('k')}: "
                    f"{r.get('search_over_raw_p95')}x; hybrid with the embedding over the "
                    f"embedding + raw: {r.get('hybrid_over_raw_question_p95')}x, over raw "
                    f"alone: {r['hybrid_over_raw_p95']}x)",
                    _verdict(r["meets_ratio_target"]),
                ],
                ["hits from other users", r["foreign_hits"], _verdict(r["foreign_hits"] == 0)],
            ],
        ),
        "Hybrid stages, p50 ms: "
        + ", ".join(f"{k} {v}" for k, v in r["hybrid_stages_p50_ms"].items())
        + ".",
    ]
    if r.get("bm25_memory_load_s") is not None:
        lines.append(
            f"In-memory BM25 copy: {r['bm25_memory_postings']} postings loaded in "
            f"{r['bm25_memory_load_s']} s (once per process; SQL scores meanwhile)."
        )
    from bench.retrieval import crowded_summary  # imported late like the bench itself

    crowded = crowded_summary(r.get("crowded_reads_p50_ms", {}), r.get("crowd_documents", 0))
    if crowded:
        lines.append(crowded[0].upper() + crowded[1:] + ".")
    return lines


def _answers_md(r: dict) -> list[str]:
    rows = []
    for p in r["paths"]:
        if p["skipped"]:
            rows.append([p["path"], p["questions"], f"skipped: {p['skipped']}", "", "", "", "", ""])
            continue
        rows.append(
            [
                p["path"],
                p["questions"],
                p["ttft_p50_s"],
                p["total_p50_s"],
                p["total_max_s"],
                p["tokens_in_mean"],
                p["tokens_out_mean"],
                f"{p['route_matches']}/{p['runs']}",
            ]
        )
    headers = ["path", "questions", "TTFT p50 s", "total p50 s", "total max s"]
    return [
        f"Model `{r['model']}`, book {r['book']['title']} ({r['book']['chunks']} chunks); "
        f"global summary by the {r['summary']['writer']} writer.",
        markdown_table([*headers, "tokens in", "tokens out", "routed as expected"], rows),
        f"Load average {r['load_avg_before']} before, {r['load_avg_after']} after.",
    ]


def _load_md(r: dict) -> list[str]:
    rows = [
        [x["route"], x["requests"], x["errors"], x["p50_ms"], x["p95_ms"], x["max_ms"]]
        for x in r["routes"]
    ]
    return [
        f"{r['clients']} clients as {r['users']} users for {r['seconds']} s, model "
        f"`{r['model']}`: {r['requests']} requests ({r['requests_per_s']}/s), "
        f"**{r['errors']} errors**.",
        markdown_table(["route", "requests", "errors", "p50 ms", "p95 ms", "max ms"], rows),
        f"Asks answered {r['asks_ok']}; usage counter {r['usage_chat_messages']}; message rows "
        f"{r['assistant_rows']} assistant / {r['user_rows']} user: "
        + ("counters match." if r["counters_match"] else "**counters do not match**."),
    ]


def _eval_retrieval_md(r: dict) -> list[str]:
    verdicts = r.get("target_verdicts", {})
    rows = [
        [
            m["mode"],
            m["queries"],
            f"{m['ndcg_at_10']:.4f}",
            f"{m['recall_at_100']:.3f}",
            f"{m['mrr_at_10']:.4f}",
            m["latency_p50_ms"],
            m["latency_p95_ms"],
            (
                f">= {r['targets'][m['mode']]:.2f}: {_verdict(verdicts.get(m['mode']))}"
                if m["mode"] in r["targets"]
                else "-"
            ),
        ]
        for m in r["modes"]
    ]
    i = r["index"]
    whole = r["split_queries"] and all(m["queries"] >= r["split_queries"] for m in r["modes"])
    lines = [
        f"{i['documents']} documents, {i['chunks']} chunks; {r['split_queries']} judged "
        f"queries ({r['split']} split)"
        + ("." if whole else "; a part of the queries, so no target verdict."),
        markdown_table(
            ["mode", "queries", "nDCG@10", "R@100", "MRR@10", "p50 ms", "p95 ms", "target"],
            rows,
        ),
        markdown_table(
            ["published (BEIR SciFact test)", "nDCG@10"],
            [[p["method"], f"{p['ndcg_at_10']:.4f}"] for p in r["published"]],
        ),
    ]
    if r["dataset"] != "scifact":
        lines.append(
            "A slice of SciFact (its judged documents plus random others) scores higher than "
            "the whole corpus, so it gets no target verdict; compare modes with each other, "
            "not with the published figures."
        )
    return lines


def _eval_answers_md(r: dict) -> list[str]:
    base = {x["route"]: x for x in r["routes"] if x["system"] == "baseline"}
    rows = []
    for x in (x for x in r["routes"] if x["system"] == "rag"):
        b = base.get(x["route"], {})
        rows.append(
            [
                x["route"],
                x["questions"],
                "-"
                if x["route_matches"] is None
                else f"{x['route_matches']}/{x['expected_routes']}",
                f"{_pct(x['accuracy'])} / {_pct(b.get('accuracy'))}",
                f"{_pct(x['f1'])} / {_pct(b.get('f1'))}",
                _pct(x["citation_validity"]),
                _pct(x["citation_support"]),
                f"{_pct(x['refusal_rate'])} / {_pct(b.get('refusal_rate'))}",
                f"{x['latency_p50_s']} / {b.get('latency_p50_s', '-')}",
                f"{x['tokens_mean']} / {b.get('tokens_mean', '-')}",
            ]
        )
    headers = ["route", "n", "routed", "match", "token F1", "citation validity"]
    return [
        f"Model `{r['model']}`, {len(r['questions']) // 2} questions; cells read Quire / the "
        "same model without retrieval.",
        markdown_table(
            [*headers, "citation support", "refusal (unanswerable)", "p50 s", "tokens"], rows
        ),
    ]


RENDERERS: dict[str, Callable[[Any], list[str]]] = {
    "ingest": _ingest_md,
    "retrieval": _retrieval_md,
    "answers": _answers_md,
    "load": _load_md,
    "eval-retrieval": _eval_retrieval_md,
    "eval-answers": _eval_answers_md,
}


def render_report(sections: list[Section], plan: BenchPlan, host: dict | None = None) -> str:
    """The Markdown report of one ``quire bench`` run."""
    host = host or machine()
    kind = "quick run" if plan.quick else "full run"
    lines = [
        f"# Quire benchmarks ({kind})",
        "",
        markdown_table(
            ["machine", ""],
            [
                ["measured at", host.get("measured_at")],
                ["commit", host.get("commit")],
                ["CPU", f"{host.get('cpu')} ({host.get('cpus')} cores)"],
                ["memory", f"{host.get('memory_gib')} GiB"],
                ["platform", host.get("platform")],
                ["python", host.get("python")],
                ["load average at the start", host.get("load_avg")],
                ["answer model", plan.model],
            ],
        ),
        "",
        markdown_table(
            ["benchmark", "outcome", "seconds"],
            [
                [
                    TITLES[s.name],
                    "skipped" if s.skipped else ("**failed**" if s.error else "done"),
                    s.seconds,
                ]
                for s in sections
            ],
        ),
    ]
    for s in sections:
        if s.skipped:
            continue
        lines += ["", f"## {TITLES[s.name]}", ""]
        if s.error:
            lines.append(f"**Failed**: `{s.error}`")
            continue
        for block in RENDERERS[s.name](s.results):
            lines += [block, ""]
        lines += [f"![{TITLES[s.name]}]({w})" for w in s.written if w.endswith(".png")]
        if s.written:
            lines.append("Results: " + ", ".join(f"`{w}`" for w in s.written))
    return "\n".join(lines).rstrip() + "\n"


def write_bench_report(markdown: str, sections: list[Section], plan: BenchPlan, folder: Path):
    """Store the report as ``report.md`` (the latest) and a dated copy, with a JSON twin."""
    import json

    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    stem = "report-quick" if plan.quick else "report"
    dated = folder / f"{stem}-{stamp}.md"
    dated.write_text(markdown, encoding="utf-8")
    (folder / f"{stem}.md").write_text(markdown, encoding="utf-8")
    payload = {
        "machine": machine(),
        "plan": plan.as_dict(),
        "sections": [asdict(s) for s in sections],
    }
    (folder / f"{stem}-{stamp}.json").write_text(json.dumps(payload, indent=2, default=str))
    return dated
