"""The FastAPI app: served alone (``quire serve``) or mounted into ``langgraph dev``."""

from __future__ import annotations

from fastapi import FastAPI

from agent import __version__

app = FastAPI(title="Quire", version=__version__, description="Chat with your documents and books.")


@app.get("/health", tags=["system"])
async def health() -> dict:
    """Liveness check (no authentication)."""
    return {"status": "ok", "version": __version__}
