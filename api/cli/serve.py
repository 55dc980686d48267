"""``quire init`` (prepare the data folder and prove the local model answers) and
``quire serve`` (the HTTP API under uvicorn, with the local model process it supervises)."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from api.cli.common import err, out, run_with_services


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

    run_with_services(work)


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
        if check.openings:
            out.print(
                f"prompts:     {check.openings} fixed openings read in "
                f"{check.openings_seconds:.1f} s, kept for every later start"
            )
        return
    err.print(f"[red]local model: not working[/red] (llama.cpp {check.build})", highlight=False)
    err.print(f"  what failed: {check.failure}", highlight=False, markup=False, soft_wrap=True)
    for line in check.advice:
        err.print(f"  - {line}", highlight=False, markup=False, soft_wrap=True)


def _start_shared_model(workers: int) -> None:
    """Before several workers start, start the one local model process they share (they
    find it through the data folder); say so when it is not available."""
    from agent.config import get_settings
    from agent.model_server.endpoint import local_model, uses_local_model

    settings = get_settings()
    if workers > 1 and uses_local_model(settings):
        found = local_model(settings)
        if found.url is None:
            err.print(f"[yellow]local model not available:[/yellow] {found.failure}")


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

    _start_shared_model(workers)
    uvicorn.run("api.app:app", host=host, port=port, workers=workers)
