"""``quire ingest``: files, folders, URLs or stdin through the ``ingest`` graph, with a
progress bar per document and stage."""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from api.cli.common import (
    JsonOption,
    UserOption,
    fail,
    out,
    print_error,
    progress_bar,
    run_with_services,
    user_name,
)

Request = tuple[str, dict]
"""One source as the user named it (``stdin`` for ``-``) and the ingest graph's input."""


def _is_url(source: str) -> bool:
    return "://" in source and not Path(source).exists()


def _stdin_request(data: bytes, title: str | None) -> dict:
    """The graph input for bytes piped on stdin: named after ``--title`` (``.txt`` unless it
    has a suffix)."""
    name = title if title and Path(title).suffix else f"{title or 'stdin'}.txt"
    return {"content_base64": base64.b64encode(data).decode(), "filename": name}


def _requests(sources: list[str], title: str | None) -> list[Request]:
    """Every source to ingest, in order: stdin, URLs, then the files (folders expanded)."""
    from agent.ingest.sources import expand_paths

    requests: list[Request] = []
    if "-" in sources:
        requests.append(("stdin", _stdin_request(sys.stdin.buffer.read(), title)))
    requests += [(s, {"url": s}) for s in sources if _is_url(s)]
    local = [Path(s) for s in sources if s != "-" and not _is_url(s)]
    requests += [(str(p), {"path": str(p)}) for p in expand_paths(local)]
    return requests


async def _stream_ingest(
    owner_name: str, request: dict, show: Callable[[str, int, int], None]
) -> dict:
    """Run the ``ingest`` graph on one request, reporting its stages; its final state."""
    from graphs.ingest import IngestContext
    from graphs.ingest import graph as ingest_graph

    final: dict = {}
    async for mode, chunk in ingest_graph.astream(
        request, context=IngestContext(user=owner_name), stream_mode=["custom", "values"]
    ):
        if mode == "custom":
            show(chunk["stage"], chunk["done"], chunk["total"])
        else:
            final = chunk
    return final


async def _ingest_source(bar: Any, owner_name: str, source: str, request: dict) -> dict:
    """Ingest one source under its own progress bar; its result row (an error is printed)."""
    from agent.models import EmbedderUnavailable

    label = "stdin" if source == "stdin" else Path(source).name or source
    task = bar.add_task(f"{label}: queued", total=None)

    def show(stage: str, done: int, total: int) -> None:
        bar.update(task, description=f"{label}: {stage}", completed=done, total=total)

    try:
        result = await _stream_ingest(owner_name, request, show)
    except EmbedderUnavailable as exc:  # nothing of this source was stored
        result = {"status": "error", "error": str(exc), "error_code": "embedder_unavailable"}
    if result.get("status") == "error":
        bar.update(task, description=f"[red]{label}: failed")
        print_error(f"{label}: {result['error']}")
        return {
            "path": source,
            "status": "error",
            "error": result["error"],
            "error_code": result.get("error_code"),
        }
    bar.update(task, description=f"{label}: {result['status']}")
    return {"path": source, **result}


def _print_results(results: list[dict], as_json: bool) -> None:
    """The result rows as JSON, or one line per stored (or duplicate) document."""
    if as_json:
        print(json.dumps(results, indent=2))
        return
    for r in results:
        if r["status"] != "error":
            out.print(f"{r['status']:>9}  {r['title']}  ({r['chunks']} chunks, {r['document_id']})")


def ingest(
    sources: Annotated[
        list[str],
        typer.Argument(
            help="Files (.txt .md .pdf .docx .pptx .html .vtt .srt), folders (recursive), http(s) URLs, "
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
    if title and len(sources) > 1:
        raise fail("--title needs exactly one source", 2)
    requests = _requests(sources, title)
    options = {"corpus": corpus, "summarize": summarize, **({"title": title} if title else {})}

    async def work(services):
        owner_name = user_name(services, user)
        with progress_bar(disable=as_json) as bar:
            results = [
                await _ingest_source(bar, owner_name, source, {**request, **options})
                for source, request in requests
            ]
        _print_results(results, as_json)
        return sum(r["status"] == "error" for r in results)

    if run_with_services(work):
        raise typer.Exit(1)
