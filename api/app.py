"""The FastAPI app: served alone (``quire serve``) or mounted into ``langgraph dev``."""

from __future__ import annotations

import logging
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from starlette.routing import Match, Mount

from agent import __version__
from api.errors import install_error_handlers
from api.routes import chats, documents, search, sharing

logger = logging.getLogger(__name__)


@asynccontextmanager
async def lifespan(app: FastAPI):
    """Start the background workers (summaries, ingest jobs) and the chat checkpointer with
    the server; stop them on shutdown."""
    from agent.checkpoint import close_checkpointer, open_checkpointer
    from agent.jobs import recover_ingest_jobs, stop_ingest_jobs
    from agent.services import get_services
    from agent.summary_worker import start_summary_worker, stop_summary_worker

    services = await get_services()
    try:
        start_summary_worker(services)
    except Exception:  # the API still serves; summaries wait for `quire summarize`
        logger.exception("could not start the summary worker")
    try:
        await recover_ingest_jobs(services)  # jobs a stopped process left behind
    except Exception:
        logger.exception("could not recover ingest jobs")
    await open_checkpointer(services)
    yield
    await stop_ingest_jobs()
    await close_checkpointer()
    await stop_summary_worker()


app = FastAPI(
    title="Quire",
    version=__version__,
    description="Chat with your documents and books.",
    lifespan=lifespan,
)


install_error_handlers(app)


@app.middleware("http")
async def refuse_oversized_bodies(request, call_next):
    """413 before reading a body whose declared length is over the upload limit (the upload
    route also counts the bytes of bodies sent without a length)."""
    from fastapi.responses import JSONResponse

    from agent.config import get_settings
    from api.errors import error_body

    declared = request.headers.get("content-length", "")
    limit = get_settings().api_max_upload_bytes
    if declared.isdigit() and int(declared) > limit:
        message = f"The request body is larger than the limit of {limit:,} bytes."
        return JSONResponse(error_body("too_large", message), status_code=413)
    return await call_next(request)


for module in (documents, sharing, search, chats):
    app.include_router(module.router, prefix="/api")


@app.get("/health", tags=["system"])
async def health() -> dict:
    """Liveness check (no authentication)."""
    return {"status": "ok", "version": __version__}


STATIC = Path(__file__).parent / "static"
# the web page; mounted last so the API routes above take precedence


class _PageFiles(Mount):
    """The page's own files under /; every other path falls through to later routes (under
    ``langgraph dev`` the LangGraph API comes after this app's routes)."""

    def matches(self, scope):
        match, child = super().matches(scope)
        if match is Match.FULL:
            path = scope["path"].removeprefix(scope.get("root_path", "")).lstrip("/")
            if scope.get("method", "GET") not in ("GET", "HEAD") or (
                path and not (STATIC / path).is_file()
            ):
                return Match.NONE, {}
        return match, child


app.router.routes.append(
    _PageFiles("/", app=StaticFiles(directory=STATIC, html=True, check_dir=False), name="page")
)
