"""The process-wide services every entry point shares: settings, database, embedder.

Created once per process and event loop (CLI command, API server, LangGraph server), with
the schema migrated and the embedding store checked before first use.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from sqlalchemy.ext.asyncio import AsyncEngine

from agent.config import Settings, get_settings
from agent.db.engine import (
    create_engine,
    ensure_embedding_store,
    migrate,
    session_options,
    stored_embedding_model,
)
from agent.db.read_pool import ReadPool
from agent.db.server import DatabaseUrls, resolve_database
from agent.models import EmbeddingModel, embedding_model
from agent.retrieval.keyword_indexes import KeywordIndexes
from agent.retrieval.maxscore import compile_kernels


@dataclass
class Services:
    """Handles to the database and models, ready to use."""

    settings: Settings
    urls: DatabaseUrls
    engine: AsyncEngine
    embeddings: EmbeddingModel
    keyword_indexes: KeywordIndexes = field(init=False)
    """In-memory copies of users' BM25 postings (see :mod:`agent.retrieval.keyword_indexes`)."""
    read_pool: ReadPool = field(init=False)
    """The connections searches read on (opened on the first search)."""

    def __post_init__(self) -> None:
        self.keyword_indexes = KeywordIndexes(
            self.settings.bm25_memory_max_postings, self.settings.bm25_memory_sync_tokens
        )
        # a search holds up to two connections at once
        self.read_pool = ReadPool(
            self.urls.libpq, session_options(self.settings), 2 * self.settings.db_pool_size
        )

    async def close(self) -> None:
        """Stop background index loads and close the connection pools."""
        await self.keyword_indexes.close()
        await self.read_pool.close()
        await self.engine.dispose()


def _compile_scoring() -> None:
    """Compile the BM25 copy's loops before any question asks for them. A failure is
    logged, not raised: the server starts, and searches whose copy fails score in SQL."""
    try:
        compile_kernels()
    except Exception:
        logging.getLogger(__name__).exception("compiling the BM25 copy's scoring loops failed")


async def open_services(settings: Settings | None = None) -> Services:
    """Start or reach Postgres, migrate, load the embedder and bind the vector store."""
    settings = settings or get_settings()
    urls = await asyncio.to_thread(resolve_database, settings)
    engine = create_engine(urls, settings)
    try:
        await migrate(urls)
        stored = await stored_embedding_model(engine)
        loading = asyncio.to_thread(embedding_model, settings.embedding_model, settings, stored)
        if settings.bm25_memory_index:  # only the memory copy uses the compiled loops
            emb, _ = await asyncio.gather(loading, asyncio.to_thread(_compile_scoring))
        else:
            emb = await loading
        await ensure_embedding_store(engine, emb.name, emb.dimension, settings)
    except BaseException:
        await engine.dispose()
        raise
    return Services(settings=settings, urls=urls, engine=engine, embeddings=emb)


_services: dict[int, Services] = {}
_locks: dict[int, asyncio.Lock] = {}


async def get_services() -> Services:
    """This event loop's shared :class:`Services`, opened on first call."""
    loop_id = id(asyncio.get_running_loop())
    if loop_id in _services:
        return _services[loop_id]
    async with _locks.setdefault(loop_id, asyncio.Lock()):
        if loop_id not in _services:
            _services[loop_id] = await open_services()
    return _services[loop_id]


@contextlib.asynccontextmanager
async def serving(services: Services) -> AsyncIterator[None]:
    """Make ``services`` what :func:`get_services` returns in this event loop for the block.

    Benchmarks and evals open services on their own database; graph nodes reach the
    database through ``get_services()``. Services the loop had before are put back after
    the block (a test session's, say), so run nothing else on this loop meanwhile.
    """
    loop_id = id(asyncio.get_running_loop())
    previous = _services.get(loop_id)
    _services[loop_id] = services
    try:
        yield
    finally:
        if previous is None:
            _services.pop(loop_id, None)
        else:
            _services[loop_id] = previous


async def close_services() -> None:
    """Close this event loop's services, if opened."""
    services = _services.pop(id(asyncio.get_running_loop()), None)
    if services:
        with contextlib.suppress(Exception):
            await services.close()
