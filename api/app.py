"""The FastAPI app: served alone (``quire serve``) or mounted into ``langgraph dev``."""

from __future__ import annotations

import logging
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from agent import __version__
from api.errors import install_error_handlers
from api.routes import chats, documents, search, sharing

logger = logging.getLogger(__name__)


@asynccontextmanager
async def lifespan(app: FastAPI):
    """Start the background summary worker with the server; stop it on shutdown."""
    from agent.services import get_services
    from agent.summary_worker import start_summary_worker, stop_summary_worker

    try:
        start_summary_worker(await get_services())
    except Exception:  # the API still serves; summaries wait for `quire summarize`
        logger.exception("could not start the summary worker")
    yield
    await stop_summary_worker()


app = FastAPI(
    title="Quire",
    version=__version__,
    description="Chat with your documents and books.",
    lifespan=lifespan,
)


install_error_handlers(app)
for module in (documents, sharing, search, chats):
    app.include_router(module.router, prefix="/api")


@app.get("/health", tags=["system"])
async def health() -> dict:
    """Liveness check (no authentication)."""
    return {"status": "ok", "version": __version__}


STATIC = Path(__file__).parent / "static"
# the web page; mounted last so the API routes above take precedence
app.mount("/", StaticFiles(directory=STATIC, html=True, check_dir=False), name="page")
