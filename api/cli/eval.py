"""``quire eval``: retrieval quality (nDCG@10, Recall@100, MRR@10) on a BEIR set, and answer
quality through the chat graph beside a no-retrieval baseline."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Column, Table

from api.cli.common import JsonOption, fail, out, progress_bar, progress_log, run_or_exit

eval_app = typer.Typer(help="Retrieval quality on public test sets.", no_args_is_help=True)

AnswerSetOption = Annotated[
    Path, typer.Option(help="JSONL: question, answers, document, expected_route, unanswerable.")
]
"""``--dataset`` of the answer sets (``quire eval answers``, ``quire eval contexts``)."""
EvalDatabaseOption = Annotated[
    str, typer.Option(help="Database holding the eval documents (never your documents).")
]
EvalUserOption = Annotated[str, typer.Option("--user", "-u", help="User owning the documents.")]

EVAL_MODE_SETS = {
    "all": ["bm25", "dense", "hybrid", "hybrid-mmr"],
    "bm25": ["bm25"],
    "dense": ["dense"],
    "hybrid": ["hybrid"],
    "hybrid-mmr": ["hybrid-mmr"],
}


def _eval_modes(mode: str, rerank: bool) -> list[str]:
    """The search modes ``--mode`` names, and the LLM rerank after them with ``--rerank``."""
    modes = list(EVAL_MODE_SETS.get(mode, []))
    if not modes:
        raise fail(f"unknown mode {mode!r}: use {', '.join(EVAL_MODE_SETS)}", 2)
    return modes + (["hybrid-rerank"] if rerank else [])


def _beir_folder(dataset: Path | None, data_dir: Path) -> Path:
    """The BEIR folder to evaluate on (default: the shared SciFact copy; ``books`` or
    ``pydoc``: the sets built here, :mod:`bench.eval_retrieval_sets`), checked."""
    from bench.common import SHARED_DATA
    from bench.eval_retrieval_sets import SETS, built_set

    if dataset is not None and str(dataset) in SETS and not dataset.exists():
        return built_set(str(dataset), data_dir / "eval" / "sets")
    folder = dataset or SHARED_DATA / "scifact"
    if not (folder / "corpus.jsonl").is_file():
        raise fail(f"{folder} is not a BEIR folder (no corpus.jsonl)", 2)
    return folder


def _settings_overrides(overrides: list[str] | None) -> dict[str, str]:
    """``--set KEY=VALUE`` items as settings fields (an unknown field is an error)."""
    from agent.config import Settings

    extra: dict[str, str] = {}
    for item in overrides or []:
        key, sep, value = item.partition("=")
        if not sep or key.strip() not in Settings.model_fields:
            raise fail(f"--set {item!r}: expected KEY=VALUE with a settings field", 2)
        extra[key.strip()] = value
    return extra


def _run_retrieval_eval(settings: Any, folder: Path, **options: Any) -> tuple[Any, Path]:
    """Index the set (or reuse the index) and search it in every mode, a progress bar per
    stage, on services of its own; the report and the folder its files go to."""
    from agent.services import open_services
    from bench.eval_retrieval import run_retrieval_eval

    with progress_bar() as bar:
        tasks: dict[str, Any] = {}

        def progress(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                label = "indexing" if stage == "index" else stage.removeprefix("query:")
                tasks[stage] = bar.add_task(label, total=total)
            bar.update(tasks[stage], completed=done, total=total)

        async def main():
            services = await open_services(settings)
            try:
                report = await run_retrieval_eval(services, folder, progress=progress, **options)
                return report, services.settings.data_dir / "eval"
            finally:
                await services.close()

        return run_or_exit(main())


def _report_stem(offset: int, limit: int | None, rerank: bool) -> str:
    """The results file name for a run: which slice it evaluated, and whether reranked."""
    return (
        "retrieval"
        + (f"-from{offset}" if offset else "")
        + (f"-n{limit}" if limit else "")
        + ("-rerank" if rerank else "")
    )


def _print_retrieval_report(report: Any) -> None:
    """The figures per mode beside their targets, the published baselines and the index."""
    table = Table("nDCG@10", "R@100", "MRR@10", "p50 ms", "p95 ms", "n", "target")
    table.columns.insert(0, Column("mode", no_wrap=True))
    for m in report.modes:
        met = report.target_met(m.mode)
        target = report.targets.get(m.mode)
        verdict = "" if met is None else f"{target:.2f} {'met' if met else 'MISS'}"
        if target is not None and met is None:
            verdict = "subset"
        table.add_row(
            m.mode,
            f"{m.ndcg_at_10:.4f}",
            f"{m.recall_at_100:.3f}",
            f"{m.mrr_at_10:.4f}",
            f"{m.latency_p50_ms:.0f}",
            f"{m.latency_p95_ms:.0f}",
            str(m.queries),
            verdict,
        )
    out.print(table)
    out.print(
        f"k = {report.depth} chunks per query cover, on average, "
        + ", ".join(f"{m.mode} {m.documents_per_query}" for m in report.modes)
        + " distinct documents (R@100 counts those)"
    )
    published = Table("published (BEIR SciFact test)", "nDCG@10")
    for p in report.published:
        published.add_row(p["method"], f"{p['ndcg_at_10']:.4f}")
    out.print(published)
    i = report.index
    how = (
        f"cached, built in {i.indexed_seconds} s"
        if i.from_cache
        else f"{i.ingested} ingested, {i.duplicates} duplicates, {i.seconds} s"
    )
    out.print(
        f"index: {i.documents} documents, {i.chunks} chunks ({how}, {len(i.failed)} failed); "
        f"types {i.doc_types}; database {report.database}"
    )
    if any(m.timed_out or m.failures for m in report.modes):
        out.print(
            "[yellow]timed out / failed searches:[/yellow] "
            + ", ".join(f"{m.mode} {m.timed_out}/{m.failures}" for m in report.modes)
        )


@eval_app.command("retrieval")
def eval_retrieval(
    dataset: Annotated[
        Path | None,
        typer.Option(
            help="BEIR folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv (default: "
            "SciFact); 'books' or 'pydoc': a set built here of another shape."
        ),
    ] = None,
    mode: Annotated[
        str,
        typer.Option(
            help="bm25, dense, hybrid, hybrid-mmr (hybrid + one-per-parent + MMR) or all."
        ),
    ] = "all",
    rerank: Annotated[
        bool,
        typer.Option("--rerank", help="Also hybrid + LLM rerank (slow on the local model)."),
    ] = False,
    limit: Annotated[
        int | None, typer.Option(help="Evaluate only the first N test queries (every mode).")
    ] = None,
    offset: Annotated[
        int,
        typer.Option(min=0, help="Skip the first N test queries (a held-out slice with --limit)."),
    ] = 0,
    database: Annotated[
        str, typer.Option(help="Database holding the eval index (never your documents).")
    ] = "quire_eval",
    user: Annotated[str, typer.Option("--user", "-u", help="User owning the index.")] = (
        "scifact-eval"
    ),
    corpus: Annotated[
        str | None,
        typer.Option(help="Corpus name of the indexed documents (default: the set's folder name)."),
    ] = None,
    split: Annotated[str, typer.Option(help="Qrels split to evaluate.")] = "test",
    depth: Annotated[int, typer.Option(help="Chunks asked of search() per query (k).")] = 100,
    timeout: Annotated[
        float,
        typer.Option(help="Search time budget per query in s (app default 3.5: too tight here)."),
    ] = 60.0,
    overrides: Annotated[
        list[str] | None,
        typer.Option("--set", help="Settings override KEY=VALUE (repeatable): --set rrf_k=30."),
    ] = None,
    name: Annotated[
        str | None, typer.Option(help="Results file stem under $QUIRE_HOME/eval.")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """nDCG@10, Recall@100, MRR@10 and latency of real ingestion + search on a BEIR set."""
    from agent.config import Settings
    from bench.eval_retrieval import write_report

    modes = _eval_modes(mode, rerank)
    extra = _settings_overrides(overrides)
    settings = Settings(
        **{"database_name": database, "retrieval_timeout_seconds": timeout, **extra}
    )
    folder = _beir_folder(dataset, settings.data_dir)
    corpus = corpus or folder.name
    report, out_dir = _run_retrieval_eval(
        settings,
        folder,
        user=user,
        corpus=corpus,
        modes=modes,
        split=split,
        depth=depth,
        limit=limit,
        offset=offset,
    )
    stem = name or _report_stem(offset, limit, rerank)
    json_path, png_path = write_report(report, out_dir, stem)
    if as_json:
        print(
            json.dumps(
                {**report.as_dict(per_query=False), "written": [str(json_path), str(png_path)]},
                indent=2,
            )
        )
        return
    _print_retrieval_report(report)
    out.print(f"written: {json_path} and {png_path}")


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def _answers_table(report: Any) -> Table:
    """One row per route: Quire's figures beside the no-retrieval baseline's."""
    table = Table(
        Column("route", no_wrap=True),
        "n",
        "routed",
        "match",
        "F1",
        "cit. valid",
        "cit. support",
        "in context",
        "refusal",
        "p50 s",
        "tokens",
    )
    rag = {r.route: r for r in report.rows("rag")}
    base = {r.route: r for r in report.rows("baseline")}
    for route, r in rag.items():
        b = base.get(route)
        table.add_row(
            route,
            str(r.questions),
            "-" if r.route_matches is None else f"{r.route_matches}/{r.expected_routes}",
            f"{_pct(r.accuracy)} / {_pct(b.accuracy if b else None)}",
            f"{_pct(r.f1)} / {_pct(b.f1 if b else None)}",
            _pct(r.citation_validity),
            _pct(r.citation_support),
            _pct(r.answer_in_context),
            f"{_pct(r.refusal_rate)} / {_pct(b.refusal_rate if b else None)}",
            f"{r.latency_p50_s} / {b.latency_p50_s if b else '-'}",
            f"{r.tokens_mean} / {b.tokens_mean if b else '-'}",
        )
    return table


def _tools_line(report: Any) -> str:
    """Tool selection on against off, over every question of the run."""
    on, off = report.row("rag", "all"), report.row("rag_no_tools", "all")
    return (
        f"tool selection on / off: match {_pct(on.accuracy)} / {_pct(off.accuracy)}, "
        f"F1 {_pct(on.f1)} / {_pct(off.f1)}, citation support {_pct(on.citation_support)} / "
        f"{_pct(off.citation_support)}, p50 {on.latency_p50_s} / {off.latency_p50_s} s"
    )


@eval_app.command("answers")
def eval_answers(
    dataset: AnswerSetOption,
    model: Annotated[
        str, typer.Option(help="Chat model spec: extractive, local, openai:gpt-4o-mini...")
    ] = "extractive",
    limit: Annotated[int | None, typer.Option(help="Ask only the first N questions.")] = None,
    database: EvalDatabaseOption = "quire_eval_answers",
    user: EvalUserOption = "answers-eval",
    name: Annotated[
        str, typer.Option(help="Results file stem under $QUIRE_HOME/eval.")
    ] = "answers",
    llm_summaries: Annotated[
        bool,
        typer.Option(
            "--llm-summaries",
            help="Write the books' global summaries with the model (slow), not extractive.",
        ),
    ] = False,
    compare_tools: Annotated[
        bool,
        typer.Option(
            "--compare-tools",
            help="Ask every question twice, tool selection on and off (rows rag_no_tools).",
        ),
    ] = False,
    baseline: Annotated[
        bool, typer.Option(help="Also answer without retrieval (the baseline columns).")
    ] = True,
    resume: Annotated[
        bool,
        typer.Option(
            "--resume",
            help="Go on with a stopped run of the same --name: questions it answered are "
            "kept from <name>.partial.jsonl, the others asked.",
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Answer accuracy, token F1, citation validity/support and refusals through the chat
    graph, beside a no-retrieval baseline."""
    from bench.eval_answers import run_answers_eval, write_report

    if not dataset.is_file():
        raise fail(f"{dataset} is not a file", 2)

    log = progress_log(as_json)

    report, out_dir = run_or_exit(
        run_answers_eval(
            dataset,
            model=model,
            limit=limit,
            database=database,
            user=user,
            summaries=model if llm_summaries else "extractive",
            compare_tools=compare_tools,
            baseline=baseline,
            name=name,
            resume=resume,
            log=log,
        ),
        FileNotFoundError,
        ValueError,
    )
    json_path, png_path = write_report(report, out_dir, name)
    if as_json:
        print(
            json.dumps({**report.as_dict(), "written": [str(json_path), str(png_path)]}, indent=2)
        )
        return
    out.print(_answers_table(report))
    if report.row("rag_no_tools", "all"):
        out.print(_tools_line(report))
    out.print(
        "cells: Quire (retrieval) / baseline (same model, no retrieval); routed: questions "
        "whose expected route the router took"
    )
    out.print(
        f"model {report.model}; database {report.database}; documents "
        + ", ".join(f"{d['file']} ({d['status']}, {d['chunks']} chunks)" for d in report.documents)
        + f"; {report.seconds} s"
    )
    out.print(f"written: {json_path} and {png_path}")
