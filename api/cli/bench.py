"""``quire bench``: benchmarks that print figures and write them under the data folder; alone,
every benchmark into one Markdown report."""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from api.cli.bench_chat import bench_answers_command, bench_load_command
from api.cli.common import JsonOption, err, fail, log_dim, out, run_or_exit, run_with_services

bench_app = typer.Typer(
    help="Benchmarks that print figures. Alone, `quire bench` runs them all into one report.",
    invoke_without_command=True,
)


@bench_app.callback()
def bench_all(
    ctx: typer.Context,
    quick: Annotated[
        bool,
        typer.Option(
            "--quick", help="Minutes: small corpora, a 10 s load, a SciFact slice, 9 questions."
        ),
    ] = False,
    model: Annotated[
        str | None,
        typer.Option(
            help="Chat model of the answer benchmarks (default: local; quick: extractive)."
        ),
    ] = None,
    skip: Annotated[
        list[str] | None,
        typer.Option(
            help="Leave out a benchmark (repeatable): ingest, retrieval, answers, load, "
            "eval-retrieval, eval-answers."
        ),
    ] = None,
) -> None:
    """Run every benchmark and write one Markdown report with all figures and the machine.

    Options here apply to the full run only (`quire bench --quick`), not to subcommands.
    """
    if ctx.invoked_subcommand is not None:
        return
    from agent.config import get_settings
    from bench.report import (
        BENCHMARKS,
        BenchPlan,
        render_report,
        run_benchmarks,
        write_bench_report,
    )

    unknown = sorted(set(skip or []) - set(BENCHMARKS))
    if unknown:
        raise fail(f"unknown benchmark {', '.join(unknown)}: use {', '.join(BENCHMARKS)}", 2)
    plan = (
        BenchPlan.quick_plan(model or "extractive", skip=frozenset(skip or []))
        if quick
        else BenchPlan(model=model or "local", skip=frozenset(skip or []))
    )
    sections = asyncio.run(
        run_benchmarks(plan, log=lambda m: err.print(m, style="dim", highlight=False))
    )
    markdown = render_report(sections, plan)
    written = write_bench_report(markdown, sections, plan, get_settings().data_dir / "bench")
    typer.echo(markdown)  # plain: rich would wrap the tables
    out.print(f"written: {written}")
    if any(s.error for s in sections):
        raise typer.Exit(1)


@bench_app.command("ingest")
def bench_ingest_command(
    files: Annotated[
        list[Path] | None, typer.Argument(help="Files (default: P&P + textbook).")
    ] = None,
) -> None:
    """Time to searchable, seconds per stage, chunks/s and pipeline/embedder ratio (goal >= 0.85)."""
    from bench.common import bench_ingest, machine, write_results
    from bench.ingest import RATIO_GOAL, SEARCHABLE_GOAL_S

    async def work(services):
        return await bench_ingest(services, files or None), services.settings.data_dir

    figures, data_dir = run_with_services(work)
    table = Table(
        "file",
        "pages",
        "chunks",
        "searchable s",
        "parse",
        "chunk",
        "embed",
        "store",
        "chunks/s",
        "raw embed s",
        "ratio",
    )
    for f in figures:
        table.add_row(
            f.file,
            str(f.pages or "-"),
            str(f.chunks),
            str(f.searchable_s),
            str(f.parse_s),
            str(f.chunk_s),
            str(f.embed_s),
            str(f.store_s),
            str(f.chunks_per_s),
            str(f.raw_embed_s),
            str(f.throughput_ratio),
        )
    out.print(table)
    for f in figures:
        out.print(
            f"{f.file}: searchable in {f.searchable_s} s (goal for Pride and Prejudice "
            f"< {SEARCHABLE_GOAL_S:g} s), pipeline/raw {f.throughput_ratio} (goal >= "
            f"{RATIO_GOAL}); chapter summaries "
            f"{'still pending (background)' if f.summaries_pending else 'not pending'}"
        )
    out.print(f"machine: {machine()}")
    out.print(f"written: {write_results('ingest', figures, data_dir / 'bench')}")


@bench_app.command("retrieval")
def bench_retrieval_command(
    queries: Annotated[int, typer.Option(help="Queries to time.")] = 200,
    chunks: Annotated[
        int, typer.Option(help="Child chunks of the target user (9 others get a tenth each).")
    ] = 100_000,
    rebuild: Annotated[bool, typer.Option(help="Drop the benchmark database first.")] = False,
    sizes: Annotated[
        str | None,
        typer.Option(
            help="Library sizes to time in one database (e.g. 10k,100k,1m): cost growth, "
            "BM25 copy load and memory, HNSW build and size, and a PNG of p95 against size."
        ),
    ] = None,
    vocabulary: Annotated[
        str,
        typer.Option(
            help="--sizes corpus text: 'books' (every word common at any size: BM25's worst "
            "case) or 'growing' (books of 2,000 chunks with their own names and rare words; "
            "its own database)."
        ),
    ] = "books",
) -> None:
    """p50/p95 ms of embedding, dense, BM25, hybrid and raw pgvector top-k (database quire_bench)."""
    from bench.common import machine, write_results
    from bench.retrieval import run_retrieval_bench

    if sizes is not None:
        from bench.retrieval_scaling import parse_sizes

        try:
            parsed = parse_sizes(sizes)
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="--sizes") from None
        if vocabulary not in ("books", "growing"):
            raise typer.BadParameter("use 'books' or 'growing'", param_hint="--vocabulary")
        _bench_retrieval_sizes(parsed, queries, rebuild, vocabulary)
        return

    figures, data_dir = run_or_exit(run_retrieval_bench(queries, chunks, rebuild, log=log_dim))
    b = figures.build
    out.print(
        f"corpus: {b.child_chunks} child chunks in {b.documents} documents, "
        f"{figures.corpus['target_chunks']} of them the target user's "
        f"({'reused' if b.reused else 'built'}: {b.total_s} s; load {b.load_s} s, "
        f"BM25 stats {b.keyword_stats_s} s, HNSW build {b.index_build_s} s)"
    )
    table = Table("operation", "p50 ms", "p95 ms", "mean ms", "max ms")
    for f in figures.latencies:
        table.add_row(f.operation, str(f.p50_ms), str(f.p95_ms), str(f.mean_ms), str(f.max_ms))
    out.print(table)
    hybrid_p95 = figures.latency("hybrid").p95_ms
    out.print(
        f"hybrid p95 {hybrid_p95} ms <= {figures.hybrid_p95_target_ms:g} ms: "
        f"{'met' if figures.meets_p95_target else 'NOT met'}; hybrid search given the "
        f"query vector / raw top-{figures.candidates} (the depth it reads) p95 "
        f"{figures.search_over_raw_candidates_p95} <= {figures.ratio_target:g}: "
        f"{'met' if figures.meets_ratio_target else 'NOT met'} (over raw top-{figures.k}: "
        f"{figures.search_over_raw_p95}x; hybrid with the embedding over the embedding + "
        f"raw: {figures.hybrid_over_raw_question_p95}x, over raw alone: "
        f"{figures.hybrid_over_raw_p95}x)"
    )
    out.print(
        f"queries: {figures.queries}, k {figures.k}, candidates {figures.candidates}, "
        f"foreign hits {figures.foreign_hits}, short results {figures.short_results}, "
        f"hybrid timeouts {figures.hybrid_timeouts}, HNSW used {figures.uses_hnsw}, "
        f"load avg {figures.load_avg_before} -> {figures.load_avg_after}"
    )
    out.print(f"hybrid stages p50 ms: {figures.hybrid_stages_p50_ms}")
    if figures.bm25_memory_load_s is not None:
        out.print(
            f"in-memory BM25 copy: {figures.bm25_memory_postings} postings loaded in "
            f"{figures.bm25_memory_load_s} s (once per process; SQL scores meanwhile)"
        )
    if figures.crowded_reads_p50_ms:
        out.print(figures.crowded_summary())
    out.print(f"machine: {machine()}")
    out.print(f"written: {write_results('retrieval', asdict(figures), data_dir / 'bench')}")


def _bench_retrieval_sizes(sizes: list[int], queries: int, rebuild: bool, vocabulary: str) -> None:
    """``quire bench retrieval --sizes``: one table row per size, the goals, JSON and PNG
    (``retrieval_sizes`` or ``retrieval_sizes_growing``)."""
    from bench.common import machine, write_results
    from bench.retrieval_scaling import draw_scaling_chart, run_scaling_bench, size_label

    figures, data_dir = run_or_exit(
        run_scaling_bench(sizes, queries, rebuild, log=log_dim, vocabulary=vocabulary)
    )
    stem = "retrieval_sizes" if vocabulary == "books" else f"retrieval_sizes_{vocabulary}"
    labels = [size_label(p.chunks) for p in figures.points]
    table = Table("p50 / p95 ms", *labels)
    for op in ("hybrid", "hybrid_search", "dense", "keyword", "keyword_sql", "raw", "embed"):
        table.add_row(
            op,
            *(
                f"{p.search.latency(op).p50_ms} / {p.search.latency(op).p95_ms}"
                for p in figures.points
            ),
        )
    for i, op in enumerate(("dense", "keyword", "keyword_sql")):
        table.add_row(
            f"{op} + embed",
            *(
                f"{p.search.with_embedding[i].p50_ms} / {p.search.with_embedding[i].p95_ms}"
                for p in figures.points
            ),
        )
    table.add_row(
        "raw top-candidates",
        *(
            f"{p.search.latency('raw_candidates').p50_ms} / {p.search.latency('raw_candidates').p95_ms}"
            for p in figures.points
        ),
    )
    out.print(table)
    table = Table("build and memory", *labels)
    rows = {
        "load (COPY) s": [p.build.load_s for p in figures.points],
        "BM25 statistics s": [p.build.keyword_stats_s for p in figures.points],
        "HNSW build s": [p.build.index_build_s for p in figures.points],
        "vectors it indexed": [f"{p.index_vectors:,}" for p in figures.points],
        "HNSW index MiB": [p.index_mb for p in figures.points],
        "BM25 copy load s": [p.search.bm25_memory_load_s for p in figures.points],
        "BM25 copy postings": [f"{p.search.bm25_memory_postings:,}" for p in figures.points],
        "BM25 copy MiB": [p.bm25_memory_mib for p in figures.points],
        "process RSS MiB": [p.rss_mib for p in figures.points],
        "foreign hits": [p.search.foreign_hits for p in figures.points],
    }
    for name, values in rows.items():
        table.add_row(name, *(str(v) for v in values))
    out.print(table)
    for name, goal in figures.goals.items():
        out.print(
            f"{name}: {goal['value']} (goal {goal['goal']:g}): {'met' if goal['met'] else 'NOT met'}"
        )
    out.print(f"vectors in the database: {figures.vectors_in_database:,}; machine: {machine()}")
    folder = data_dir / "bench"
    out.print(f"written: {write_results(stem, asdict(figures), folder)}")
    out.print(f"chart: {draw_scaling_chart(figures, folder / f'{stem}.png')}")


bench_app.command("answers")(bench_answers_command)


@bench_app.command("model")
def bench_model_command(
    rounds: Annotated[int, typer.Option(min=1, help="Rounds per mode (cold + follow-up).")] = 3,
    compare: Annotated[
        list[str] | None,
        typer.Option(help="LABEL=FOLDER: another llama_cpp build to time beside the installed."),
    ] = None,
    runtime: Annotated[
        bool,
        typer.Option(
            "--runtime",
            help="Only the speed under each runtime setting (threads, "
            "batch, flash attention, KV type, mlock).",
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """llama.cpp prompt/writing tokens/s per build, and time to first token in-process
    against the supervised model process (one run)."""
    from agent.config import get_settings
    from bench.common import machine, write_results
    from bench.model import run_model_bench

    settings = get_settings()
    if runtime:
        _runtime_command(settings, as_json)
        return
    pairs = dict(item.split("=", 1) for item in compare or [])
    figures = asyncio.run(run_model_bench(settings, rounds, pairs))
    payload = figures.as_json()
    written = write_results("model", payload, settings.data_dir / "bench")
    if as_json:
        print(json.dumps({"machine": machine(), "results": payload, "written": str(written)}))
        return
    table = Table("build", "prompt tok/s", "writing tok/s", "kernels")
    for b in figures.builds:
        kernels = b.error or " ".join(
            n for n in ("AVX2", "AVX512", "AVX512_VNNI", "AMX_INT8") if f"{n} = 1" in b.system_info
        )
        table.add_row(b.build, str(b.prompt_tokens_per_s), str(b.gen_tokens_per_s), kernels)
    out.print(table)
    ttft = Table("time to first token, p50 s", "cold question", "follow-up (cached prefix)")
    for t in figures.ttft:
        ttft.add_row(t.mode, str(t.p50("cold")), str(t.p50("follow_up")))
    ttft.add_row("ratio", str(figures.ratio("cold")), str(figures.ratio("follow_up")))
    out.print(ttft)
    out.print(f"written: {written}")


def _runtime_command(settings, as_json: bool) -> None:
    """``quire bench model --runtime``: one row per runtime variant."""
    from dataclasses import asdict

    from agent.local_models import ensure_chat_model_file
    from bench.common import machine, write_results
    from bench.model_runtime import runtime_speeds

    model = ensure_chat_model_file(settings.model_cache_dir, settings.local_chat_file)
    rows = runtime_speeds(settings, model)
    payload = {"runtime": [asdict(r) for r in rows]}
    written = write_results("model-runtime", payload, settings.data_dir / "bench")
    if as_json:
        print(json.dumps({"machine": machine(), "results": payload, "written": str(written)}))
        return
    table = Table("runtime setting", "prompt tok/s", "writing tok/s")
    for r in rows:
        table.add_row(r.variant, str(r.error or r.prompt_tokens_per_s), str(r.gen_tokens_per_s))
    out.print(table)
    out.print(f"written: {written}")


bench_app.command("load")(bench_load_command)
