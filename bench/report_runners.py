"""Running ``quire bench``: one runner per benchmark, each in its own database (``--quick``
runs use ``*_quick`` ones), its figures stored as JSON (and PNG); one that fails is
reported as failed and the rest go on."""

from __future__ import annotations

import time
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.common import database_settings, opened_services, write_results
from bench.ingest import bench_ingest
from bench.paths import ROOT, SHARED_DATA
from bench.progress import Log, quiet
from bench.report_plan import BENCHMARKS, BenchPlan

ANSWERS_DATASET = ROOT / "tests" / "data" / "answers.jsonl"
SCIFACT = SHARED_DATA / "scifact"


@dataclass
class Section:
    """One benchmark's outcome: its JSON figures, or why it failed."""

    name: str
    seconds: float = 0.0
    results: Any = None
    error: str | None = None
    skipped: bool = False
    written: list[str] = field(default_factory=list)


def _stored(plan: BenchPlan, name: str, payload: Any, data_dir: Path) -> list[str]:
    """Write a benchmark's figures under ``<data_dir>/bench``; the path, as a list."""
    return [str(write_results(plan.result_name(name), payload, data_dir / "bench"))]


async def _ingest(plan: BenchPlan, log: Log) -> tuple[Any, list[str]]:
    async with opened_services(database_settings(plan.database("quire_bench_ingest"))) as services:
        figures = await bench_ingest(services, plan.ingest_files)
        written = _stored(plan, "ingest", figures, services.settings.data_dir)
    return [asdict(f) for f in figures], written


async def _retrieval(plan: BenchPlan, log: Log) -> tuple[Any, list[str]]:
    from bench.retrieval import BENCH_DATABASE, run_retrieval_bench

    figures, data_dir = await run_retrieval_bench(
        plan.retrieval_queries,
        plan.retrieval_chunks,
        log=log,
        database=plan.database(BENCH_DATABASE),
        pool_size=plan.retrieval_pool,
    )
    payload = asdict(figures)
    return payload, _stored(plan, "retrieval", payload, data_dir)


async def _answers(plan: BenchPlan, log: Log) -> tuple[Any, list[str]]:
    from bench.answers import BENCH_DATABASE, figures_json, run_answers_bench

    figures, data_dir = await run_answers_bench(
        plan.model, log=log, database=plan.database(BENCH_DATABASE)
    )
    payload = figures_json(figures)
    return payload, _stored(plan, "answers", payload, data_dir)


async def _load(plan: BenchPlan, log: Log) -> tuple[Any, list[str]]:
    from bench.load import BENCH_DATABASE, LoadConfig, run_load_bench

    config = LoadConfig(clients=plan.load_clients, seconds=plan.load_seconds)
    figures, data_dir = await run_load_bench(
        config, model=plan.load_model, database=plan.database(BENCH_DATABASE), log=log
    )
    payload = figures.as_dict()
    return payload, _stored(plan, "load", payload, data_dir)


async def _eval_retrieval(plan: BenchPlan, log: Log) -> tuple[Any, list[str]]:
    from bench.eval_retrieval import run_retrieval_eval, write_beir_subset, write_report

    # the CLI's own default: the app's 3.5 s search budget is too tight for a whole eval
    settings = database_settings(plan.database("quire_eval")).model_copy(
        update={"retrieval_timeout_seconds": 60.0}
    )
    async with opened_services(settings) as services:
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
    payload = report.as_dict(per_query=False)
    # the targets are for the whole corpus: a slice (fewer competitors) gets no verdict
    payload["target_verdicts"] = {
        m.mode: None if plan.eval_slice else report.target_met(m.mode) for m in report.modes
    }
    return payload, [str(json_path), str(png_path)]


async def _eval_answers(plan: BenchPlan, log: Log) -> tuple[Any, list[str]]:
    from bench.eval_answers import evaluate_answers, load_dataset, write_report

    items = load_dataset(ANSWERS_DATASET)[:: plan.answers_stride]
    settings = database_settings(plan.database("quire_eval_answers"))
    async with opened_services(settings) as services:
        report = await evaluate_answers(
            services, items, dataset=str(ANSWERS_DATASET), model=plan.model, log=log
        )
        name = plan.result_name("answers")
        json_path, png_path = write_report(report, settings.data_dir / "eval", name)
    return report.as_dict(), [str(json_path), str(png_path)]


RUNNERS: dict[str, Callable[[BenchPlan, Log], Awaitable[tuple[Any, list[str]]]]] = {
    "ingest": _ingest,
    "retrieval": _retrieval,
    "answers": _answers,
    "load": _load,
    "eval-retrieval": _eval_retrieval,
    "eval-answers": _eval_answers,
}


async def run_benchmarks(plan: BenchPlan, log: Log = quiet) -> list[Section]:
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
