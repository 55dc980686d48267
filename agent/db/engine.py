"""The async SQLAlchemy engine, schema migrations and the embedding-store guard."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import sqlalchemy
from alembic import command
from alembic.config import Config
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool

from agent.config import Settings
from agent.db.server import DatabaseUrls

log = logging.getLogger(__name__)

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
# Arbitrary constant: serialises concurrent migrations from several processes.
_MIGRATION_LOCK = 7_201_905_431


class EmbeddingMismatchError(RuntimeError):
    """The configured embedding model does not match the vectors already stored."""


def session_options(settings: Settings) -> str:
    """libpq ``options`` of every connection: filtered HNSW scans return full result sets."""
    return f"-c hnsw.iterative_scan=relaxed_order -c hnsw.ef_search={settings.hnsw_ef_search}"


def create_engine(urls: DatabaseUrls, settings: Settings) -> AsyncEngine:
    """An async engine whose sessions let filtered HNSW scans return full result sets."""
    return create_async_engine(
        urls.sqlalchemy,
        pool_size=settings.db_pool_size,
        pool_pre_ping=True,
        connect_args={"options": session_options(settings)},
    )


def migrate_sync(urls: DatabaseUrls) -> None:
    """Bring the schema to the newest revision (blocking; safe from several processes)."""
    engine = sqlalchemy.create_engine(urls.sqlalchemy, poolclass=NullPool)
    try:
        with engine.begin() as conn:
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _MIGRATION_LOCK})
            cfg = Config()
            cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "head")
    finally:
        engine.dispose()


async def migrate(urls: DatabaseUrls) -> None:
    """:func:`migrate_sync` off the event loop (Alembic reads its scripts from disk)."""
    await asyncio.to_thread(migrate_sync, urls)


async def _index_exists(conn: AsyncConnection, name: str) -> bool:
    found = await conn.execute(text("SELECT to_regclass(:n) IS NOT NULL"), {"n": name})
    return bool(found.scalar())


async def stored_embedding_model(engine: AsyncEngine) -> str | None:
    """The embedding model the store's vectors come from; None before the first is bound."""
    async with engine.connect() as conn:
        return (await conn.execute(text("SELECT model FROM embedding_store WHERE id = 1"))).scalar()


async def ensure_embedding_store(
    engine: AsyncEngine, model: str, dimension: int, settings: Settings
) -> None:
    """Bind the vector column to ``model``'s dimension on first use; refuse a mismatch later.

    The first embedder to touch a store fixes ``child_chunks.embedding`` to ``vector(dim)``
    and builds the HNSW cosine index. Any later process configured with another model or
    dimension is refused with a message naming both, instead of mixing vector spaces.
    """
    async with engine.begin() as conn:
        await conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _MIGRATION_LOCK + 1})
        row = (
            await conn.execute(text("SELECT model, dimension FROM embedding_store WHERE id = 1"))
        ).first()
        if row is not None:
            if row.dimension != dimension or row.model != model:
                raise EmbeddingMismatchError(
                    f"This store holds vectors from embedding model {row.model!r} "
                    f"({row.dimension} dimensions), but QUIRE_EMBEDDING_MODEL gives {model!r} "
                    f"({dimension} dimensions). Mixing them would make search meaningless: "
                    "set QUIRE_EMBEDDING_MODEL back, or use a new database (QUIRE_HOME or "
                    "DATABASE_URL) and ingest again."
                )
            return
        # a new type brings its own storage (pgvector's: EXTERNAL): vectors stay inline
        # (migration 0013)
        await conn.execute(
            text(
                "ALTER TABLE child_chunks "
                f"ALTER COLUMN embedding TYPE vector({int(dimension)}), "
                "ALTER COLUMN embedding SET STORAGE MAIN"
            )
        )
        if not await _index_exists(conn, "child_chunks_embedding_hnsw"):
            await conn.execute(
                text(
                    "CREATE INDEX child_chunks_embedding_hnsw ON child_chunks "
                    "USING hnsw (embedding vector_cosine_ops) "
                    f"WITH (m = {int(settings.hnsw_m)}, "
                    f"ef_construction = {int(settings.hnsw_ef_construction)})"
                )
            )
        await conn.execute(
            text("INSERT INTO embedding_store (id, model, dimension) VALUES (1, :m, :d)"),
            {"m": model, "d": dimension},
        )
        log.info("embedding store bound to %s (%d dims)", model, dimension)
