"""Ingestion throughput (``quire bench ingest``): each file through the real pipeline, then
its chunks through the raw embedder, for the ratio of the two."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import text

from agent.ingest.pipeline import ingest_bytes
from agent.library.accounts import resolve_user
from agent.services import Services
from bench.paths import PRIDE, SHARED_DATA

INGEST_FILES = [
    PRIDE,
    SHARED_DATA / "docs" / "pdf-samples" / "009-pdflatex-geotopo" / "GeoTopo-komprimiert.pdf",
]


@dataclass
class IngestFigures:
    """One document's ingestion figures."""

    file: str
    chunks: int
    parents: int
    total_s: float
    parse_s: float
    chunk_s: float
    embed_s: float
    store_s: float
    chunks_per_s: float
    raw_embed_s: float
    throughput_ratio: float
    """Pipeline throughput / raw embedder throughput on the same chunks (target >= 0.8)."""


async def bench_ingest(services: Services, files: list[Path] | None = None) -> list[IngestFigures]:
    """Ingest each file as a fresh user, then re-embed its chunks raw for the ratio."""
    figures: list[IngestFigures] = []
    embedder = services.embeddings.embedder
    # warm the runtime for every input length once, as a running server would be
    embedder.embed_documents(["word " * n for n in range(4, 300, 4)])
    for path in files or INGEST_FILES:
        user = await resolve_user(services, f"bench-{uuid.uuid4().hex[:8]}")
        data = path.read_bytes()
        result = await ingest_bytes(services, user.id, data, path.name, source_uri=str(path))
        async with services.engine.connect() as conn:
            texts = list(
                (
                    await conn.execute(
                        text(
                            "SELECT text FROM child_chunks WHERE document_id = :d ORDER BY chunk_index"
                        ),
                        {"d": result.document_id},
                    )
                ).scalars()
            )
        start = time.perf_counter()
        embedder.embed_documents(texts)
        raw = time.perf_counter() - start
        t = result.timings
        figures.append(
            IngestFigures(
                file=path.name,
                chunks=result.chunks,
                parents=result.parents,
                total_s=round(result.seconds, 2),
                parse_s=round(t.get("parse", 0.0), 2),
                chunk_s=round(t.get("chunk", 0.0), 2),
                embed_s=round(t.get("embed", 0.0), 2),
                store_s=round(t.get("store", 0.0), 2),
                chunks_per_s=round(result.chunks / result.seconds, 1),
                raw_embed_s=round(raw, 2),
                throughput_ratio=round(raw / result.seconds, 3),
            )
        )
        async with services.engine.begin() as conn:  # leave the store as it was
            await conn.execute(text("DELETE FROM users WHERE id = :u"), {"u": user.id})
    return figures
