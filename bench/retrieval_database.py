"""The retrieval benchmark's own database (``quire_bench``, never the user's data): its
name, opening services on it, and dropping it for ``--rebuild``."""

from __future__ import annotations

import asyncio

from agent.config import Settings
from agent.db.server import server_url, with_database
from agent.services import Services, open_services
from bench.common import QUICK_SUFFIX, database_settings

BENCH_DATABASE = "quire_bench"
SCALE_DATABASE = "quire_bench_scale"
"""``quire bench retrieval --sizes``: one library per size (:mod:`bench.retrieval_scaling`)."""
GROWING_SCALE_DATABASE = "quire_bench_scale_growing"
"""The same with ``--vocabulary growing`` (:mod:`bench.retrieval_corpus`)."""
HNSW_INDEX = "child_chunks_embedding_hnsw"
"""The HNSW index over the chunk vectors (dropped for the load in the benchmark database)."""


def is_bench_database(name: str | None) -> bool:
    """Whether ``name`` is one of this benchmark's databases (full or ``--quick``)."""
    return name in (
        BENCH_DATABASE,
        BENCH_DATABASE + QUICK_SUFFIX,
        SCALE_DATABASE,
        GROWING_SCALE_DATABASE,
    )


def drop_bench_database(settings: Settings) -> None:
    """Drop the benchmark database (``--rebuild``); refuses any other name."""
    import psycopg
    from psycopg import sql

    if not is_bench_database(settings.database_name):
        raise ValueError(f"refusing to drop {settings.database_name!r}")
    admin = with_database(server_url(settings), "postgres").libpq
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(settings.database_name)
            )
        )


async def open_bench_services(
    rebuild: bool = False, base: Settings | None = None, database: str = BENCH_DATABASE
) -> Services:
    """Services on the benchmark database (dropped first with ``rebuild``)."""
    settings = await asyncio.to_thread(database_settings, database, base)
    if rebuild:
        await asyncio.to_thread(drop_bench_database, settings)
    return await open_services(settings)
