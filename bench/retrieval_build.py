"""Getting the retrieval benchmark's corpus into the database, or finding it there.

:func:`build_corpus` embeds the sentence pool with the real embedder, COPYs every user's
rows (:mod:`bench.retrieval_corpus`), computes the BM25 statistics set-based (exactly the
SQL ingestion runs per document, for all documents at once), rebuilds the HNSW index with
the real :func:`ensure_embedding_store` when it was dropped for the load, and stores its
figures on the target user's first document so that :func:`ensure_corpus` can reuse it.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from dataclasses import asdict, dataclass

import numpy as np
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from agent.db.documents import insert_keyword_stats
from agent.db.engine import ensure_embedding_store
from agent.db.users import get_or_create_user
from agent.services import Services
from bench.progress import Log, quiet
from bench.retrieval_corpus import (
    CorpusSpec,
    SentencePool,
    book_sentences,
    copy_rows,
    user_rows,
)
from bench.retrieval_database import BENCH_DATABASE, HNSW_INDEX, is_bench_database

_LOAD_BATCH_CHUNKS = 50_000


@dataclass
class BuildFigures:
    """How the corpus came to be (``reused``: built by an earlier run, figures from then)."""

    reused: bool
    documents: int
    child_chunks: int
    parent_chunks: int
    pool_embed_s: float = 0.0
    load_s: float = 0.0
    """Generating rows and COPYing them in (HNSW index present only when ``index_during_load``)."""
    keyword_stats_s: float = 0.0
    analyze_s: float = 0.0
    index_build_s: float | None = None
    """HNSW build over all vectors after the load (None: the index was kept during the load)."""
    index_during_load: bool = True
    total_s: float = 0.0


async def corpus_users(services: Services, spec: CorpusSpec) -> dict[str, uuid.UUID]:
    """The ids of the corpus users that exist, by name."""
    async with services.engine.connect() as conn:
        rows = await conn.execute(
            text("SELECT name, id FROM users WHERE name = ANY(:n)"), {"n": spec.user_names()}
        )
        return {r.name: r.id for r in rows}


async def _corpus_complete(services: Services, spec: CorpusSpec) -> bool:
    found = await corpus_users(services, spec)
    names = spec.user_names()
    if len(found) != len(names):
        return False
    async with services.engine.connect() as conn:
        counts = dict(
            (
                await conn.execute(
                    text(
                        "SELECT user_id, sum(keyword_chunks) FROM documents "
                        "WHERE user_id = ANY(:u) GROUP BY user_id"
                    ),
                    {"u": list(found.values())},
                )
            ).all()
        )
        index = (
            await conn.execute(text("SELECT to_regclass(:n) IS NOT NULL"), {"n": HNSW_INDEX})
        ).scalar()
    return bool(index) and all(
        counts.get(found[name]) == spec.chunks_of(i) for i, name in enumerate(names)
    )


async def drop_corpus(services: Services, spec: CorpusSpec) -> None:
    """Delete the corpus users with all their documents."""
    async with services.engine.begin() as conn:
        await conn.execute(text("DELETE FROM users WHERE name = ANY(:n)"), {"n": spec.user_names()})


async def _sentence_pool(
    services: Services, spec: CorpusSpec, rng: np.random.Generator, log: Log
) -> tuple[SentencePool, float]:
    """The books' sentences with a sample of them embedded; the seconds embedding took."""
    sentences = book_sentences()
    pool_at = np.sort(rng.choice(len(sentences), min(spec.pool_size, len(sentences)), False))
    log(f"embedding a pool of {len(pool_at)} book sentences with the real embedder...")
    t = time.perf_counter()
    pool = np.array(
        await asyncio.to_thread(
            services.embeddings.embedder.embed_documents, [sentences[i] for i in pool_at]
        ),
        dtype=np.float32,
    )
    return SentencePool(sentences, pool_at, pool), time.perf_counter() - t


async def _create_users(
    services: Services, spec: CorpusSpec, index_during_load: bool
) -> list[uuid.UUID]:
    """The corpus users (the HNSW index and the embedding store dropped for the load when
    ``index_during_load`` is off)."""
    async with services.engine.begin() as conn:
        user_ids = [(await get_or_create_user(conn, name)).id for name in spec.user_names()]
        if not index_during_load:
            await conn.execute(text(f"DROP INDEX IF EXISTS {HNSW_INDEX}"))
            await conn.execute(text("DELETE FROM embedding_store"))
    return user_ids


async def _load_users(
    services: Services,
    spec: CorpusSpec,
    user_ids: list[uuid.UUID],
    pool: SentencePool,
    rng: np.random.Generator,
    log: Log,
) -> tuple[int, int]:
    """COPY every user's rows on one psycopg connection; documents and parents loaded."""
    import psycopg
    from pgvector.psycopg import register_vector_async

    documents = parents = 0
    async with await psycopg.AsyncConnection.connect(services.urls.libpq) as copy_conn:
        await register_vector_async(copy_conn)
        for i, user_id in enumerate(user_ids):
            n = spec.chunks_of(i)
            log(f"loading user {i + 1}/{spec.users}: {n} child chunks...")
            # in batches of whole documents: a 1M-chunk library never sits in memory at once
            batch = (
                max(_LOAD_BATCH_CHUNKS // spec.chunks_per_document, 1) * spec.chunks_per_document
            )
            for done in range(0, n, batch):
                docs, parent_rows, children = user_rows(
                    spec,
                    user_id,
                    min(batch, n - done),
                    pool,
                    services.embeddings.name,
                    rng,
                    first_document=done // spec.chunks_per_document,
                )
                await copy_rows(copy_conn, docs, parent_rows, children)
                documents += len(docs)
                parents += len(parent_rows)
                if n > batch:
                    log(f"  {done + len(children):,} / {n:,} chunks loaded")
    return documents, parents


# The keyword tables' indexes, dropped for a bulk statistics insert and built after it.
_KEYWORD_TABLES = ("keyword_postings", "keyword_terms")


async def _drop_indexes(conn, tables: tuple[str, ...]) -> list[tuple[str, str, str | None]]:
    """Drop every index of ``tables`` (primary keys too); ``(table, CREATE INDEX statement,
    primary key constraint name or None)`` to build them again."""
    rows = (
        await conn.execute(
            text(
                "SELECT t.relname AS tab, pg_get_indexdef(i.indexrelid) AS create_sql, "
                "c.conname AS pkey, x.relname AS idx FROM pg_index i "
                "JOIN pg_class t ON t.oid = i.indrelid JOIN pg_class x ON x.oid = i.indexrelid "
                "LEFT JOIN pg_constraint c ON c.conindid = i.indexrelid AND c.contype = 'p' "
                "WHERE t.relname = ANY(:tables) AND t.relnamespace = 'public'::regnamespace"
            ),
            {"tables": list(tables)},
        )
    ).all()
    for row in rows:
        if row.pkey:
            await conn.execute(text(f'ALTER TABLE {row.tab} DROP CONSTRAINT "{row.pkey}"'))
        else:
            await conn.execute(text(f'DROP INDEX "{row.idx}"'))
    return [(row.tab, row.create_sql, row.pkey) for row in rows]


async def _build_indexes(conn, indexes: list[tuple[str, str, str | None]]) -> None:
    """Build the indexes :func:`_drop_indexes` dropped, primary keys as constraints again."""
    for table, create, pkey in indexes:
        await conn.execute(text(create))
        if pkey:
            await conn.execute(
                text(
                    f'ALTER TABLE {table} ADD CONSTRAINT "{pkey}" PRIMARY KEY USING INDEX "{pkey}"'
                )
            )


async def _keyword_stats(
    services: Services, user_ids: list[uuid.UUID], defer_indexes: bool = False
) -> None:
    """Ingestion's BM25 statistics (postings, term counts) for every corpus document at once. ``defer_indexes``: the
    keyword tables' indexes are dropped for the insert and built after it, one sort each
    instead of one B-tree insertion per posting (benchmark database only)."""
    async with services.engine.begin() as conn:
        dropped = []
        if defer_indexes:
            await conn.execute(text("SET LOCAL maintenance_work_mem = '1GB'"))
            dropped = await _drop_indexes(conn, _KEYWORD_TABLES)
        await insert_keyword_stats(conn, "d.user_id = ANY(:u)", {"u": user_ids})
        await _build_indexes(conn, dropped)
        await conn.execute(
            text(
                "UPDATE documents d SET keyword_chunks = s.n, keyword_tokens = s.tokens, "
                "updated_at = now() FROM (SELECT c.document_id, count(*) AS n, "
                "coalesce(sum(c.token_count), 0) AS tokens FROM child_chunks c "
                "JOIN documents d2 ON d2.id = c.document_id WHERE d2.user_id = ANY(:u) "
                "GROUP BY c.document_id) s WHERE d.id = s.document_id"
            ),
            {"u": user_ids},
        )


async def _build_index(services: Services) -> None:
    """The HNSW index over all vectors, by :func:`ensure_embedding_store`."""
    # the graph must fit in maintenance_work_mem to build fast (~2 KB a 384-d vector: 2.2 GB
    # for 1.1M); the leader and one worker share it (pgvector builds in parallel)
    builder = create_async_engine(
        services.urls.sqlalchemy,
        poolclass=NullPool,
        connect_args={
            "options": "-c maintenance_work_mem=3GB -c max_parallel_maintenance_workers=1"
        },
    )
    try:
        emb = services.embeddings
        await ensure_embedding_store(builder, emb.name, emb.dimension, services.settings)
    finally:
        await builder.dispose()


async def _vacuum_analyze(services: Services) -> None:
    import psycopg

    async with await psycopg.AsyncConnection.connect(services.urls.libpq, autocommit=True) as c:
        await c.execute(
            "VACUUM (ANALYZE) documents, parent_chunks, child_chunks, keyword_terms, "
            "keyword_postings, users"
        )


async def _mark_built(services: Services, figures: BuildFigures, target: uuid.UUID) -> None:
    """Store the figures on the target user's first document: the marker a later run reuses."""
    async with services.engine.begin() as conn:
        await conn.execute(
            text(
                "UPDATE documents SET metadata = CAST(:m AS jsonb) WHERE id = "
                "(SELECT id FROM documents WHERE user_id = :u ORDER BY id LIMIT 1)"
            ),
            {"m": json.dumps({"bench_build": asdict(figures)}), "u": target},
        )


async def build_corpus(
    services: Services, spec: CorpusSpec, index_during_load: bool = True, log: Log = quiet
) -> BuildFigures:
    """Create the corpus users and their documents (any earlier corpus of ``spec`` is dropped).

    ``index_during_load=False`` drops the HNSW index for the load and rebuilds it after with
    :func:`ensure_embedding_store`; allowed only in the benchmark database.
    """
    began = time.perf_counter()
    rng = np.random.default_rng(spec.seed)
    await drop_corpus(services, spec)
    async with services.engine.connect() as conn:
        database = (await conn.execute(text("SELECT current_database()"))).scalar()
    if not index_during_load and not is_bench_database(database):
        raise ValueError(f"the HNSW index is dropped only in {BENCH_DATABASE!r}, not {database!r}")

    pool, pool_embed_s = await _sentence_pool(services, spec, rng, log)
    user_ids = await _create_users(services, spec, index_during_load)

    t = time.perf_counter()
    documents, parents = await _load_users(services, spec, user_ids, pool, rng, log)
    load_s = time.perf_counter() - t

    log("computing BM25 statistics...")
    t = time.perf_counter()
    await _keyword_stats(services, user_ids, defer_indexes=not index_during_load)
    keyword_stats_s = time.perf_counter() - t

    index_build_s = None
    if not index_during_load:
        log("building the HNSW index (ensure_embedding_store)...")
        t = time.perf_counter()
        await _build_index(services)
        index_build_s = time.perf_counter() - t

    log("vacuum analyze...")
    t = time.perf_counter()
    await _vacuum_analyze(services)
    analyze_s = time.perf_counter() - t

    figures = BuildFigures(
        reused=False,
        documents=documents,
        child_chunks=spec.total_chunks,
        parent_chunks=parents,
        pool_embed_s=round(pool_embed_s, 2),
        load_s=round(load_s, 2),
        keyword_stats_s=round(keyword_stats_s, 2),
        analyze_s=round(analyze_s, 2),
        index_build_s=None if index_build_s is None else round(index_build_s, 2),
        index_during_load=index_during_load,
        total_s=round(time.perf_counter() - began, 2),
    )
    await _mark_built(services, figures, user_ids[0])
    return figures


async def ensure_corpus(
    services: Services,
    spec: CorpusSpec,
    rebuild: bool = False,
    index_during_load: bool = True,
    log: Log = quiet,
) -> BuildFigures:
    """Reuse a complete corpus of ``spec`` or build it."""
    if not rebuild and await _corpus_complete(services, spec):
        async with services.engine.connect() as conn:
            stored = (
                await conn.execute(
                    text(
                        "SELECT d.metadata -> 'bench_build' FROM documents d JOIN users u "
                        "ON u.id = d.user_id WHERE u.name = :n AND d.metadata ? 'bench_build'"
                    ),
                    {"n": spec.user_names()[0]},
                )
            ).scalar()
        figures = BuildFigures(**stored) if stored else BuildFigures(False, 0, 0, 0)
        figures.reused = True
        log(f"reusing the corpus built earlier ({figures.total_s} s)")
        return figures
    return await build_corpus(services, spec, index_during_load, log)
