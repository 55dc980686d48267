"""The FastAPI app: served alone (``quire serve``) or mounted into ``langgraph dev``."""

from __future__ import annotations

import logging
import threading
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.datastructures import Headers
from starlette.routing import Match, Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agent import __version__
from api.errors import ApiError, error_body, install_error_handlers
from api.routes import chats, documents, search, sharing

logger = logging.getLogger(__name__)


@asynccontextmanager
async def lifespan(app: FastAPI):
    """Start the background workers (summaries, ingest jobs), the local model's process and
    the chat checkpointer with the server; stop them on shutdown (the model process stops
    when this process exits)."""
    from agent.chat.overview import openings_to_warm
    from agent.ingest.jobs import recover_ingest_jobs, stop_ingest_jobs
    from agent.model_server.endpoint import start_in_background
    from agent.services import get_services
    from agent.summaries.worker import start_summary_worker, stop_summary_worker
    from graphs.checkpoint import close_checkpointer, open_checkpointer

    services = await get_services()
    # the local model loads while the server starts, then caches the prompts' openings
    start_in_background(services.settings, await openings_to_warm(services))
    warm_embedder = getattr(services.embeddings.embedder, "warm", None)  # the local one's
    if warm_embedder is not None:
        threading.Thread(target=warm_embedder, name="embedder-warm", daemon=True).start()
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
    await services.read_pool.close()  # reopens on next use (tests share the services)


app = FastAPI(
    title="Quire",
    version=__version__,
    description="Chat with your documents and books.",
    lifespan=lifespan,
)


install_error_handlers(app)


class _BodyTooLarge(ApiError):
    """Raised from ``receive`` once a request body passes the limit (FastAPI's body reading
    lets an ``HTTPException`` through, so the route ends with this 413)."""

    def __init__(self, limit: int) -> None:
        message = f"The request body is larger than the limit of {limit:,} bytes."
        super().__init__(413, "too_large", message)


class BodyLimit:
    """ASGI middleware: ``413 too_large`` for a request body over ``api_max_upload_bytes``.

    A declared ``Content-Length`` over the limit is refused before a byte is read; a body
    sent without one (chunked) is counted as it arrives and refused at the first chunk past
    the limit, so it is never buffered whole. The limit is read per request (a setting).
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on with a ``receive`` that counts the body's bytes."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        from agent.config import get_settings

        limit = get_settings().api_max_upload_bytes
        declared = Headers(scope=scope).get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            await _too_large_response(_BodyTooLarge(limit))(scope, receive, send)
            return
        received = 0
        started = False

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise _BodyTooLarge(limit)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except _BodyTooLarge as exc:  # read outside a route (no handler answered it)
            if started:
                raise
            await _too_large_response(exc)(scope, receive, send)


def _too_large_response(exc: _BodyTooLarge) -> JSONResponse:
    return JSONResponse(error_body(exc.code, str(exc.detail)), status_code=413)


app.add_middleware(BodyLimit)


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
