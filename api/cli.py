"""The ``quire`` command line: users, ingestion, questions, interactive chat, servers."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import click
import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

app = typer.Typer(help="Quire: chat with your documents and books.", no_args_is_help=True)
users_app = typer.Typer(help="Manage users and their API tokens.", no_args_is_help=True)
app.add_typer(users_app, name="users")

out = Console()
err = Console(stderr=True)

UserOption = Annotated[
    str | None, typer.Option("--user", "-u", help="User name (default: the local user).")
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
BookOption = Annotated[
    str | None,
    typer.Option("--book", help="Put one book in scope: its document id or title."),
]
PersonaOption = Annotated[
    str | None,
    typer.Option("--persona", help="A persona for this chat (tone and role); the chat keeps it."),
]


def _progress_bar(disable: bool = False) -> Progress:
    """The CLI's progress display (on stderr): label, bar, done/total, elapsed time."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        disable=disable,
    )


def _run(work: Callable[[Any], Awaitable[Any]]) -> Any:
    """Open the services, run ``work(services)``, close them; turn known errors into lines."""
    from agent.db.engine import EmbeddingMismatchError
    from agent.model_server.endpoint import ModelUnavailable
    from agent.services import close_services, get_services

    async def main():
        try:
            return await work(await get_services())
        finally:
            await close_services()

    try:
        return asyncio.run(main())
    except EmbeddingMismatchError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    except ModelUnavailable as exc:
        err.print(f"[red]error:[/red] model_unavailable: {exc}", highlight=False)
        raise typer.Exit(1) from None
    except (typer.Exit, typer.Abort, click.exceptions.Exit, click.ClickException):
        raise
    except Exception as exc:  # a model or database failure: one line, the trace on request
        if os.environ.get("QUIRE_DEBUG"):
            raise
        err.print(
            f"[red]error:[/red] {type(exc).__name__}: {exc or 'no message'} "
            "(QUIRE_DEBUG=1 shows the trace)",
            highlight=False,
        )
        raise typer.Exit(1) from None


@app.command()
def init() -> None:
    """Prepare the data folder: start the database, migrate it, assemble the local model and
    check that it answers (one token, in a child process)."""

    async def work(services):
        settings = services.settings
        out.print(f"data folder: {settings.data_dir}")
        out.print(f"database:    {'external' if settings.database_url else 'embedded'} (ready)")
        out.print(f"chat model:  {settings.chat_model}; embeddings: {services.embeddings.name}")
        if "local" in (settings.chat_model, settings.reasoning_model):
            await asyncio.to_thread(_check_local_model, settings)

    _run(work)


def _check_local_model(settings) -> None:
    """Print whether the local model answers, and what to do when it does not."""
    if settings.local_model_url:
        out.print(f"local model: {settings.local_model_url} (QUIRE_LOCAL_MODEL_URL)")
        return
    from agent.model_server.doctor import check_local_model

    check = check_local_model(settings)
    for name, why in check.skipped.items():
        err.print(f"[yellow]llama.cpp {name} build failed here:[/yellow] {why}", highlight=False)
    if check.ok:
        out.print(
            f"local model: ready, first token in {check.seconds:.1f} s on the llama.cpp "
            f"{check.running} build (installed: {check.build})"
        )
        return
    err.print(f"[red]local model: not working[/red] (llama.cpp {check.build})", highlight=False)
    err.print(f"  what failed: {check.failure}", highlight=False, markup=False, soft_wrap=True)
    for line in check.advice:
        err.print(f"  - {line}", highlight=False, markup=False, soft_wrap=True)


@users_app.command("add")
def users_add(name: str) -> None:
    """Create a user and print their API token (shown only once)."""
    from agent.library.accounts import add_user

    async def work(services):
        try:
            user, token = await add_user(services, name)
        except ValueError as exc:
            err.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(1) from None
        err.print(f"created user {user.name} ({user.id})")
        print(token)

    _run(work)


@users_app.command("token")
def users_token(name: str) -> None:
    """Issue a new API token for an existing user (e.g. one the CLI created); shown once."""
    from agent.library.accounts import issue_user_token

    async def work(services):
        try:
            user, token = await issue_user_token(services, name)
        except ValueError as exc:
            err.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(1) from None
        err.print(f"new token for {user.name} ({user.id})")
        print(token)

    _run(work)


def _is_url(source: str) -> bool:
    return "://" in source and not Path(source).exists()


@app.command()
def ingest(
    sources: Annotated[
        list[str],
        typer.Argument(
            help="Files (.txt .md .pdf .docx .pptx .html), folders (recursive), http(s) URLs, "
            "or - for stdin."
        ),
    ],
    user: UserOption = None,
    corpus: Annotated[
        str, typer.Option(help="Collection to file the documents under.")
    ] = "default",
    title: Annotated[str | None, typer.Option(help="Title (single source only).")] = None,
    summarize: Annotated[
        bool,
        typer.Option(
            "--summarize", help="Also write book summaries now (else a server does it later)."
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Ingest documents for a user through the ``ingest`` graph, with a progress bar per
    document and stage; identical content is reported as a duplicate."""
    import base64

    from agent.ingest.pipeline import expand_paths
    from agent.models import EmbedderUnavailable
    from graphs.ingest import IngestContext
    from graphs.ingest import graph as ingest_graph

    if title and len(sources) > 1:
        err.print("[red]error:[/red] --title needs exactly one source")
        raise typer.Exit(2)
    stdin = sys.stdin.buffer.read() if "-" in sources else None
    requests: list[tuple[str, dict]] = []
    if stdin is not None:
        name = title if title and Path(title).suffix else f"{title or 'stdin'}.txt"
        requests.append(
            ("stdin", {"content_base64": base64.b64encode(stdin).decode(), "filename": name})
        )
    requests += [(s, {"url": s}) for s in sources if _is_url(s)]
    local = [Path(s) for s in sources if s != "-" and not _is_url(s)]
    requests += [(str(p), {"path": str(p)}) for p in expand_paths(local)]

    async def one(owner_name: str, request: dict, show) -> dict:
        request = {**request, "corpus": corpus, "summarize": summarize}
        if title:
            request["title"] = title
        final: dict = {}
        async for mode, chunk in ingest_graph.astream(
            request, context=IngestContext(user=owner_name), stream_mode=["custom", "values"]
        ):
            if mode == "custom":
                show(chunk["stage"], chunk["done"], chunk["total"])
            else:
                final = chunk
        return final

    async def work(services):
        owner_name = user or services.settings.default_user
        results, failures = [], 0
        with _progress_bar(disable=as_json) as bar:
            for source, request in requests:
                label = "stdin" if source == "stdin" else Path(source).name or source
                task = bar.add_task(f"{label}: queued", total=None)

                def show(stage: str, done: int, total: int, task=task, label=label) -> None:
                    bar.update(task, description=f"{label}: {stage}", completed=done, total=total)

                try:
                    result = await one(owner_name, request, show)
                except EmbedderUnavailable as exc:  # nothing of this source was stored
                    result = {"status": "error", "error": str(exc)}
                    result["error_code"] = "embedder_unavailable"
                if result.get("status") == "error":
                    failures += 1
                    bar.update(task, description=f"[red]{label}: failed")
                    err.print(f"[red]error:[/red] {label}: {result['error']}")
                    results.append(
                        {
                            "path": source,
                            "status": "error",
                            "error": result["error"],
                            "error_code": result.get("error_code"),
                        }
                    )
                    continue
                bar.update(task, description=f"{label}: {result['status']}")
                results.append({"path": source, **result})
        if as_json:
            print(json.dumps(results, indent=2))
        else:
            for r in results:
                if r["status"] != "error":
                    out.print(
                        f"{r['status']:>9}  {r['title']}  ({r['chunks']} chunks, {r['document_id']})"
                    )
        return failures

    if _run(work):
        raise typer.Exit(1)


docs_app = typer.Typer(help="List, show and delete your documents.", no_args_is_help=True)
app.add_typer(docs_app, name="docs")


def _document_json(doc) -> dict:
    return {
        "id": str(doc.id),
        "title": doc.title,
        "file_type": doc.file_type,
        "doc_type": doc.doc_type,
        "status": doc.status,
        "summary_status": doc.summary_status,
        "summary_progress": f"{doc.summary_done}/{doc.summary_total}",
        "chunks": doc.chunk_count,
        "pages": doc.page_count,
        "source": doc.source_uri,
        "created_at": doc.created_at.isoformat(),
    }


def _document_id(raw: str) -> uuid.UUID:
    try:
        return uuid.UUID(raw)
    except ValueError:
        err.print(f"[red]error:[/red] {raw!r} is not a document id")
        raise typer.Exit(2) from None


def _no_such_document(document_id: str) -> typer.Exit:
    err.print(f"[red]error:[/red] no document {document_id} for this user")
    return typer.Exit(1)


@docs_app.command("list")
def docs_list(user: UserOption = None, as_json: JsonOption = False) -> None:
    """Your documents, newest first, with ingestion and summary status."""
    from agent.library.accounts import resolve_user
    from agent.library.documents import list_user_documents

    async def work(services):
        owner = await resolve_user(services, user)
        return [_document_json(d) for d in await list_user_documents(services, owner.id)]

    docs = _run(work)
    if as_json:
        print(json.dumps(docs, indent=2))
        return
    table = Table("id", "title", "type", "chunks", "status", "summary")
    for d in docs:
        table.add_row(
            d["id"], d["title"], d["doc_type"], str(d["chunks"]), d["status"], d["summary_status"]
        )
    out.print(table)


@docs_app.command("show")
def docs_show(document_id: str, user: UserOption = None) -> None:
    """One document's details, summaries and table of contents as JSON."""
    from agent.library.accounts import resolve_user
    from agent.library.documents import document_summaries, get_user_document

    doc_id = _document_id(document_id)

    async def work(services):
        owner = await resolve_user(services, user)
        doc = await get_user_document(services, owner.id, doc_id)
        if doc is None:
            return None
        details = _document_json(doc)
        details["summaries"] = await document_summaries(services, owner.id, doc_id)
        return details

    details = _run(work)
    if details is None:
        raise _no_such_document(document_id)
    print(json.dumps(details, indent=2))


@docs_app.command("delete")
def docs_delete(document_id: str, user: UserOption = None) -> None:
    """Delete a document with every chunk, vector, keyword entry and summary."""
    from agent.library.accounts import resolve_user
    from agent.library.documents import delete_user_document

    doc_id = _document_id(document_id)

    async def work(services):
        return await delete_user_document(services, (await resolve_user(services, user)).id, doc_id)

    if not _run(work):
        raise _no_such_document(document_id)
    out.print(f"deleted {document_id}")


@app.command()
def summarize(
    document_id: str,
    user: UserOption = None,
    force: Annotated[
        bool, typer.Option("--force", help="Rewrite every summary, not only missing ones.")
    ] = False,
    model: Annotated[
        str | None,
        typer.Option(help="Model spec (default QUIRE_SUMMARY_MODEL or the chat model)."),
    ] = None,
) -> None:
    """(Re)write a document's summaries: per section, per chapter, and for the whole book.

    Resumable: an interrupted run continues where it stopped; summaries already written by
    the same model are kept unless --force.
    """
    from agent.library.accounts import resolve_user
    from agent.library.documents import get_user_document
    from agent.summaries.builder import NothingToSummarize, SummaryBusy, summarize_document
    from agent.summaries.writers import summary_writer

    doc_id = _document_id(document_id)

    async def work(services):
        owner = await resolve_user(services, user)
        doc = await get_user_document(services, owner.id, doc_id)
        if doc is None:
            raise _no_such_document(document_id)
        writer = await summary_writer(services.settings, model)
        with _progress_bar() as bar:
            task = bar.add_task(f"{doc.title}: summaries", total=None)

            def progress(p) -> None:
                bar.update(
                    task, description=f"{doc.title}: {p.stage}", completed=p.done, total=p.total
                )

            try:
                return await summarize_document(
                    services, doc_id, writer=writer, force=force, progress=progress
                )
            except (SummaryBusy, NothingToSummarize) as exc:
                err.print(f"[red]error:[/red] {exc}")
                raise typer.Exit(1) from None

    report = _run(work)
    out.print(
        f"summaries by {report.model}: wrote {report.sections_written}/{report.sections} sections, "
        f"{report.chapters_written}/{report.chapters} chapters, "
        f"book {'written' if report.book_written else 'kept'} in {report.seconds:.1f} s"
    )


def _answer_json(state: dict) -> dict:
    return {
        "answer": state.get("answer", ""),
        "route": state.get("route"),
        "citations": [
            {
                k: c.get(k)
                for k in ("id", "chunk_id", "document", "chapter", "section", "page", "text")
            }
            for c in state.get("citations", [])
        ],
        "sources": state.get("sources", []),
        "model_used": state.get("model_used"),
        "tokens_used": state.get("tokens_used", 0),
        "chat_id": state.get("chat_id"),
    }


async def _stream_turn(graph, question: str, context, config: dict, echo: bool) -> tuple[dict, str]:
    """Run one turn, printing answer tokens as they arrive; return final state and streamed text."""
    from graphs.streaming import stream_turn

    final: dict = {}
    streamed = ""
    async for event in stream_turn(graph, question, context=context, config=config):
        if event.kind == "token" and echo:
            streamed += event.text
            out.print(event.text, end="", soft_wrap=True, highlight=False, markup=False)
        elif event.kind == "final":
            final = event.state
    return final, streamed


def _print_footer(state: dict, streamed: str) -> None:
    answer = state.get("answer", "")
    if not streamed.strip():
        out.print(answer, highlight=False, markup=False)
    elif streamed.strip() != answer:
        # the citation guard repaired the streamed text: show the final version
        out.print(f"\n[dim]with citations:[/dim] {answer}", highlight=False)
    else:
        out.print()
    for c in state.get("citations", []):
        out.print(f"  [cyan]{c['id']}[/cyan] {c.get('source', '')}", highlight=False)
    out.print(
        f"[dim]route: {state.get('route')} · model: {state.get('model_used')} · tokens: {state.get('tokens_used', 0)}[/dim]"
    )


@app.command()
def ask(
    question: str,
    user: UserOption = None,
    chat: Annotated[str | None, typer.Option(help="Chat id to add this turn to.")] = None,
    book: BookOption = None,
    persona: PersonaOption = None,
    as_json: JsonOption = False,
) -> None:
    """Ask one question about your documents; the answer streams, with citations."""
    from graphs.chat import graph, wait_for_background
    from graphs.context import Context

    async def work(services):
        context = Context(
            user=user or services.settings.default_user, chat_id=chat, book=book, persona=persona
        )
        state, streamed = await _stream_turn(graph, question, context, {}, echo=not as_json)
        if as_json:
            print(json.dumps(_answer_json(state), indent=2, ensure_ascii=False))
        else:
            _print_footer(state, streamed)
        await wait_for_background(timeout=300)  # the chat summary and turn memory

    _run(work)


@app.command()
def chat(
    user: UserOption = None,
    chat_id: Annotated[str | None, typer.Option("--chat", help="Resume this chat.")] = None,
    book: BookOption = None,
    persona: PersonaOption = None,
) -> None:
    """Interactive chat with streaming answers; conversation state is checkpointed in Postgres."""
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    from agent.model_server.endpoint import ModelUnavailable
    from graphs.chat import build_graph, wait_for_background
    from graphs.context import Context

    async def work(services):
        thread = chat_id or str(uuid.uuid4())
        async with AsyncPostgresSaver.from_conn_string(services.urls.libpq) as saver:
            await saver.setup()
            graph = build_graph().compile(checkpointer=saver)
            context = Context(
                user=user or services.settings.default_user,
                chat_id=thread,
                book=book,
                persona=persona,
            )
            err.print(f"[dim]chat {thread} · type /quit to leave[/dim]")
            while True:
                try:
                    question = await asyncio.to_thread(input, "you> ")
                except (EOFError, KeyboardInterrupt):
                    break
                if question.strip() in {"/quit", "/exit"}:
                    break
                if not question.strip():
                    continue
                out.print("[bold]quire>[/bold] ", end="")
                config = {"configurable": {"thread_id": thread}}
                try:
                    state, streamed = await _stream_turn(
                        graph, question, context, config, echo=True
                    )
                except ModelUnavailable as exc:  # the chat goes on once the model is back
                    err.print(f"\n[red]error:[/red] model_unavailable: {exc}", highlight=False)
                    continue
                _print_footer(state, streamed)
                context = replace(context, persona=None)  # kept with the chat from now on
            await wait_for_background(timeout=300)

    _run(work)


bench_app = typer.Typer(
    help="Benchmarks that print figures. Alone, `quire bench` runs them all into one report.",
    invoke_without_command=True,
)
app.add_typer(bench_app, name="bench")


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
        err.print(
            f"[red]error:[/red] unknown benchmark {', '.join(unknown)}: use {', '.join(BENCHMARKS)}"
        )
        raise typer.Exit(2)
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
    """Seconds per stage, chunks/s and pipeline/embedder throughput ratio (target >= 0.8)."""
    from bench.common import bench_ingest, machine, write_results

    async def work(services):
        return await bench_ingest(services, files or None), services.settings.data_dir

    figures, data_dir = _run(work)
    table = Table(
        "file",
        "chunks",
        "total s",
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
            str(f.chunks),
            str(f.total_s),
            str(f.parse_s),
            str(f.chunk_s),
            str(f.embed_s),
            str(f.store_s),
            str(f.chunks_per_s),
            str(f.raw_embed_s),
            str(f.throughput_ratio),
        )
    out.print(table)
    out.print(f"machine: {machine()}")
    out.print(f"written: {write_results('ingest', figures, data_dir / 'bench')}")


@bench_app.command("retrieval")
def bench_retrieval_command(
    queries: Annotated[int, typer.Option(help="Queries to time.")] = 200,
    chunks: Annotated[
        int, typer.Option(help="Child chunks of the target user (9 others get a tenth each).")
    ] = 100_000,
    rebuild: Annotated[bool, typer.Option(help="Drop the benchmark database first.")] = False,
) -> None:
    """p50/p95 ms of embedding, dense, BM25, hybrid and raw pgvector top-k (database quire_bench)."""
    from dataclasses import asdict

    from agent.db.engine import EmbeddingMismatchError
    from bench.common import machine, write_results
    from bench.retrieval import run_retrieval_bench

    try:
        figures, data_dir = asyncio.run(
            run_retrieval_bench(
                queries, chunks, rebuild, log=lambda m: err.print(f"[dim]{m}[/dim]")
            )
        )
    except EmbeddingMismatchError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
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


@bench_app.command("answers")
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
    from rich.table import Column

    from agent.db.engine import EmbeddingMismatchError
    from bench.answers import figures_json, run_answers_bench
    from bench.common import machine, write_results

    try:
        figures, data_dir = asyncio.run(
            run_answers_bench(
                model, repeat, llm_summaries, log=lambda m: err.print(f"[dim]{m}[/dim]")
            )
        )
    except EmbeddingMismatchError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
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
    table = Table(
        Column("path", no_wrap=True),
        "questions",
        "TTFT p50 s",
        "total p50 s",
        "total max s",
        "tokens in",
        "tokens out",
        "route matches",
        title=f"model {figures.model}, repeat {figures.repeat}",
    )
    for p in figures.paths:
        if p.skipped:
            table.add_row(p.path, str(p.questions), f"skipped: {p.skipped}", *[""] * 5)
            continue
        table.add_row(
            p.path,
            str(p.questions),
            str(p.ttft_p50_s),
            str(p.total_p50_s),
            str(p.total_max_s),
            str(p.tokens_in_mean),
            str(p.tokens_out_mean),
            f"{p.route_matches}/{p.runs}",
        )
    out.print(table)
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


@bench_app.command("model")
def bench_model_command(
    rounds: Annotated[int, typer.Option(min=1, help="Rounds per mode (cold + follow-up).")] = 3,
    compare: Annotated[
        list[str] | None,
        typer.Option(help="LABEL=FOLDER: another llama_cpp build to time beside the installed."),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """llama.cpp prompt/writing tokens/s per build, and time to first token in-process
    against the supervised model process (one run)."""
    from agent.config import get_settings
    from bench.common import machine, write_results
    from bench.model import run_model_bench

    settings = get_settings()
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


@bench_app.command("load")
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
            err.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(2) from None
    config = LoadConfig(clients=clients, seconds=seconds, max_requests=max_requests, users=users)
    figures, data_dir = asyncio.run(
        run_load_bench(
            config,
            url=url,
            model=model,
            database=database,
            log=lambda m: err.print(f"[dim]{m}[/dim]"),
        )
    )
    payload = figures.as_dict()
    written = write_results("load", payload, data_dir / "bench")
    if as_json:
        print(json.dumps({"machine": machine(), "results": payload, "written": str(written)}))
    else:
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
        out.print(f"machine: {machine()}")
        out.print(f"written: {written}")
    if figures.errors or not figures.counters_match:
        raise typer.Exit(1)


eval_app = typer.Typer(help="Retrieval quality on public test sets.", no_args_is_help=True)
app.add_typer(eval_app, name="eval")

EVAL_MODE_SETS = {
    "all": ["bm25", "dense", "hybrid", "hybrid-mmr"],
    "bm25": ["bm25"],
    "dense": ["dense"],
    "hybrid": ["hybrid"],
    "hybrid-mmr": ["hybrid-mmr"],
}


@eval_app.command("retrieval")
def eval_retrieval(
    dataset: Annotated[
        Path | None,
        typer.Option(help="BEIR folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv."),
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
    corpus: Annotated[str, typer.Option(help="Corpus name of the indexed documents.")] = "scifact",
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
    from rich.table import Column

    from agent.config import Settings
    from agent.db.engine import EmbeddingMismatchError
    from agent.services import open_services
    from bench.common import SHARED_DATA
    from bench.eval_retrieval import run_retrieval_eval, write_report

    modes = list(EVAL_MODE_SETS.get(mode, []))
    if not modes:
        err.print(f"[red]error:[/red] unknown mode {mode!r}: use {', '.join(EVAL_MODE_SETS)}")
        raise typer.Exit(2)
    if rerank:
        modes.append("hybrid-rerank")
    folder = dataset or SHARED_DATA / "scifact"
    if not (folder / "corpus.jsonl").is_file():
        err.print(f"[red]error:[/red] {folder} is not a BEIR folder (no corpus.jsonl)")
        raise typer.Exit(2)
    extra: dict[str, str] = {}
    for item in overrides or []:
        key, sep, value = item.partition("=")
        if not sep or key.strip() not in Settings.model_fields:
            err.print(f"[red]error:[/red] --set {item!r}: expected KEY=VALUE with a settings field")
            raise typer.Exit(2)
        extra[key.strip()] = value
    settings = Settings(
        **{"database_name": database, "retrieval_timeout_seconds": timeout, **extra}
    )

    with _progress_bar() as bar:
        tasks: dict[str, Any] = {}

        def progress(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                label = "indexing" if stage == "index" else stage.removeprefix("query:")
                tasks[stage] = bar.add_task(label, total=total)
            bar.update(tasks[stage], completed=done, total=total)

        async def main():
            services = await open_services(settings)
            try:
                report = await run_retrieval_eval(
                    services,
                    folder,
                    user=user,
                    corpus=corpus,
                    modes=modes,
                    split=split,
                    depth=depth,
                    limit=limit,
                    offset=offset,
                    progress=progress,
                )
                return report, services.settings.data_dir / "eval"
            finally:
                await services.close()

        try:
            report, out_dir = asyncio.run(main())
        except EmbeddingMismatchError as exc:
            err.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(2) from None

    stem = name or (
        "retrieval"
        + (f"-from{offset}" if offset else "")
        + (f"-n{limit}" if limit else "")
        + ("-rerank" if rerank else "")
    )
    json_path, png_path = write_report(report, out_dir, stem)
    if as_json:
        print(
            json.dumps(
                {**report.as_dict(per_query=False), "written": [str(json_path), str(png_path)]},
                indent=2,
            )
        )
        return
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
    out.print(f"written: {json_path} and {png_path}")


@eval_app.command("answers")
def eval_answers(
    dataset: Annotated[
        Path,
        typer.Option(help="JSONL: question, answers, document, expected_route, unanswerable."),
    ],
    model: Annotated[
        str, typer.Option(help="Chat model spec: extractive, local, openai:gpt-4o-mini...")
    ] = "extractive",
    limit: Annotated[int | None, typer.Option(help="Ask only the first N questions.")] = None,
    database: Annotated[
        str, typer.Option(help="Database holding the eval documents (never your documents).")
    ] = "quire_eval_answers",
    user: Annotated[str, typer.Option("--user", "-u", help="User owning the documents.")] = (
        "answers-eval"
    ),
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
    as_json: JsonOption = False,
) -> None:
    """Answer accuracy, token F1, citation validity/support and refusals through the chat
    graph, beside a no-retrieval baseline."""
    from rich.table import Column

    from agent.db.engine import EmbeddingMismatchError
    from bench.eval_answers import run_answers_eval, write_report

    if not dataset.is_file():
        err.print(f"[red]error:[/red] {dataset} is not a file")
        raise typer.Exit(2)

    def log(line: str) -> None:
        if not as_json:
            err.print(f"[dim]{line}[/dim]")

    try:
        report, out_dir = asyncio.run(
            run_answers_eval(
                dataset,
                model=model,
                limit=limit,
                database=database,
                user=user,
                summaries=model if llm_summaries else "extractive",
                log=log,
            )
        )
    except (EmbeddingMismatchError, FileNotFoundError, ValueError) as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    json_path, png_path = write_report(report, out_dir, name)
    if as_json:
        print(
            json.dumps({**report.as_dict(), "written": [str(json_path), str(png_path)]}, indent=2)
        )
        return

    def pct(value: float | None) -> str:
        return "-" if value is None else f"{100 * value:.0f}%"

    table = Table(
        Column("route", no_wrap=True),
        "n",
        "routed",
        "match",
        "F1",
        "cit. valid",
        "cit. support",
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
            f"{pct(r.accuracy)} / {pct(b.accuracy if b else None)}",
            f"{pct(r.f1)} / {pct(b.f1 if b else None)}",
            pct(r.citation_validity),
            pct(r.citation_support),
            f"{pct(r.refusal_rate)} / {pct(b.refusal_rate if b else None)}",
            f"{r.latency_p50_s} / {b.latency_p50_s if b else '-'}",
            f"{r.tokens_mean} / {b.tokens_mean if b else '-'}",
        )
    out.print(table)
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


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Interface to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    workers: Annotated[
        int, typer.Option(help="Worker processes (all state is in Postgres; any can serve).")
    ] = 1,
) -> None:
    """Serve the HTTP API and the page with uvicorn (``langgraph dev`` serves them with the
    graphs). Several workers share one Postgres: no process holds state another could miss,
    and one local model process, which this command starts and restarts when it dies."""
    import uvicorn

    from agent.config import get_settings
    from agent.model_server.endpoint import local_model, uses_local_model

    settings = get_settings()
    if workers > 1 and uses_local_model(settings):
        found = local_model(settings)  # the workers find it through the data folder
        if found.url is None:
            err.print(f"[yellow]local model not available:[/yellow] {found.failure}")

    uvicorn.run("api.app:app", host=host, port=port, workers=workers)


if __name__ == "__main__":  # pragma: no cover
    app()
