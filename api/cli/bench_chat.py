"""``quire bench answers`` (time and tokens per chat path) and ``quire bench load``
(concurrent clients over HTTP)."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated

import typer
from rich.table import Column, Table

from api.cli.common import JsonOption, fail, log_dim, out, run_or_exit


def _answers_table(figures) -> Table:
    """One row per chat path: time to first token beside its floor, total time, the figures
    before issue 22, tokens, route matches."""
    from bench.answers_figures import before

    table = Table(
        Column("path", no_wrap=True),
        "questions",
        "TTFT p50 s",
        "floor p50 s",
        "TTFT/floor",
        "bare read p50 s",
        "TTFT/bare read",
        "total p50 s",
        "before: TTFT / total",
        "total max s",
        "tokens in",
        "tokens out",
        "route matches",
        title=f"model {figures.model}, repeat {figures.repeat}, raw prompt speed "
        f"{figures.prompt_tokens_per_s} tokens/s",
    )
    for p in figures.paths:
        if p.skipped:
            table.add_row(p.path, str(p.questions), f"skipped: {p.skipped}", *[""] * 10)
            continue
        table.add_row(
            p.path,
            str(p.questions),
            str(p.ttft_p50_s),
            str(p.floor_p50_s or ""),
            str(p.ttft_over_floor_p50 or ""),
            str(p.raw_read_p50_s or ""),
            str(p.ttft_over_raw_read_p50 or ""),
            str(p.total_p50_s),
            before(p.path, figures.model),
            str(p.total_max_s),
            str(p.tokens_in_mean),
            str(p.tokens_out_mean),
            f"{p.route_matches}/{p.runs}",
        )
    return table


def bench_answers_command(
    model: Annotated[
        str, typer.Option(help="Chat model spec for every path ('extractive': fast plumbing run).")
    ] = "local",
    repeat: Annotated[int, typer.Option(min=1, help="Times each question is asked.")] = 1,
    llm_summaries: Annotated[
        bool,
        typer.Option(
            "--llm-summaries",
            help="Write the book's summaries with the model (slow), not extractive.",
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """TTFT, total time and tokens in/out per chat path (database quire_bench_answers)."""
    from bench.answers import figures_json, run_answers_bench
    from bench.common import machine, write_results

    figures, data_dir = run_or_exit(run_answers_bench(model, repeat, llm_summaries, log=log_dim))
    payload = figures_json(figures)
    written = write_results("answers", payload, data_dir / "bench")
    if as_json:
        print(json.dumps({"machine": machine(), "results": payload, "written": str(written)}))
        return
    b, s = figures.book, figures.summary
    summary_setup = "reused" if s["reused"] else f"written in {s['seconds']} s"
    out.print(
        f"book: {b['title']} ({b['chunks']} chunks, {b['status']} in {b['seconds']} s); "
        f"global summary by {s['model']} ({s['writer']} writer, {summary_setup})"
    )
    out.print(_answers_table(figures))
    out.print("[dim]tokens: mean per question, every model call of the turn[/dim]")
    for line in figures.mismatches:
        out.print(f"[yellow]route mismatch:[/yellow] {line}", highlight=False)
    out.print(
        f"tokens from: {figures.usage_source}; load avg {figures.load_avg_before} -> "
        f"{figures.load_avg_after}; {figures.seconds} s in all"
    )
    for note in figures.notes:
        out.print(f"[dim]- {note}[/dim]")
    out.print(f"machine: {machine()}")
    out.print(f"written: {written}")


def _print_load_figures(figures) -> None:
    """The load run's table per route, its totals, and the counters checked against the asks."""
    table = Table("route", "requests", "errors", "p50 ms", "p95 ms", "max ms")
    for r in figures.routes:
        table.add_row(
            r.route,
            str(r.requests),
            str(r.errors),
            str(r.p50_ms),
            str(r.p95_ms),
            str(r.max_ms),
        )
    out.print(table)
    out.print(
        f"{figures.requests} requests in {figures.seconds} s ({figures.requests_per_s}/s), "
        f"{figures.errors} errors; {figures.clients} clients, {figures.users} users, "
        f"model {figures.model}"
    )
    out.print(
        f"asks answered {figures.asks_ok}; usage chat_messages {figures.usage_chat_messages}; "
        f"chat_messages rows assistant {figures.assistant_rows} / user {figures.user_rows}: "
        f"{'match' if figures.counters_match else 'MISMATCH'}"
    )
    for sample in figures.error_samples:
        out.print(f"[yellow]error:[/yellow] {sample}", highlight=False)


def bench_load_command(
    clients: Annotated[int, typer.Option(min=1, help="Concurrent clients.")] = 50,
    seconds: Annotated[float, typer.Option(min=0.1, help="Seconds of load.")] = 60.0,
    max_requests: Annotated[
        int, typer.Option(min=1, help="Requests started at most (a second bound).")
    ] = 100_000,
    users: Annotated[int, typer.Option(min=1, help="Fresh users the clients act as.")] = 10,
    model: Annotated[
        str, typer.Option(help="Chat model of the API it starts ('local' for the real one).")
    ] = "extractive",
    url: Annotated[
        str | None,
        typer.Option(help="Target a running API (loopback only) on the same database instead."),
    ] = None,
    database: Annotated[
        str,
        typer.Option(
            help="Database of the started API, or the one the --url server uses (users "
            "and tokens are made there)."
        ),
    ] = "quire_bench_load",
    as_json: JsonOption = False,
) -> None:
    """Concurrent search/ask/upload over HTTP: requests, errors, p50/p95 per route, and
    usage counters and chat_messages rows checked against the asks made."""
    from bench.common import machine, write_results
    from bench.load import LoadConfig, NotLoopback, check_loopback, run_load_bench

    if url is not None:
        try:
            url = check_loopback(url)
        except NotLoopback as exc:
            raise fail(exc, 2) from None
    config = LoadConfig(clients=clients, seconds=seconds, max_requests=max_requests, users=users)
    figures, data_dir = asyncio.run(
        run_load_bench(
            config,
            url=url,
            model=model,
            database=database,
            log=log_dim,
        )
    )
    payload = figures.as_dict()
    written = write_results("load", payload, data_dir / "bench")
    if as_json:
        print(json.dumps({"machine": machine(), "results": payload, "written": str(written)}))
    else:
        _print_load_figures(figures)
        out.print(f"machine: {machine()}")
        out.print(f"written: {written}")
    if figures.errors or not figures.counters_match:
        raise typer.Exit(1)
