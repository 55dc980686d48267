"""Ingestion throughput (``quire bench ingest``): each file through the real pipeline, then
its chunks through the raw embedder, for the ratio of the two.

The default files are Pride and Prejudice and a 600-page PDF (the 117-page GeoTopo textbook
in ``shared/data`` repeated, written once under ``$QUIRE_HOME/bench``: no larger PDF ships
with the data). *Time to searchable* runs from the upload's bytes to a keyword search that
finds the document's text; chapter summaries are written later, in the background, and are
still pending at that moment.
"""

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

TEXTBOOK = SHARED_DATA / "docs" / "pdf-samples" / "009-pdflatex-geotopo" / "GeoTopo-komprimiert.pdf"
INGEST_FILES = [PRIDE, TEXTBOOK]
LONG_PDF_PAGES = 600
SEARCHABLE_GOAL_S = 30.0
"""Pride and Prejudice searchable within this many seconds on 2 cores."""
RATIO_GOAL = 0.85
"""Pipeline chunks/s over the raw embedder's on the same chunks."""


def long_pdf(folder: Path, pages: int = LONG_PDF_PAGES) -> Path:
    """A ``pages``-page PDF made of the textbook's pages over and over (written once)."""
    from pypdf import PdfReader, PdfWriter

    path = folder / f"textbook-{pages}-pages.pdf"
    if path.exists():
        return path
    source = PdfReader(TEXTBOOK)
    writer = PdfWriter()
    while len(writer.pages) < pages:
        for page in source.pages[: pages - len(writer.pages)]:
            writer.add_page(page)
    folder.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as out:
        writer.write(out)
    return path


def default_files(folder: Path) -> list[Path]:
    """Pride and Prejudice and the 600-page PDF."""
    return [PRIDE, long_pdf(folder)]


@dataclass
class IngestFigures:
    """One document's ingestion figures."""

    file: str
    chunks: int
    parents: int
    pages: int | None
    searchable_s: float
    """From the upload's bytes to a keyword search finding the document."""
    summaries_pending: bool
    """Chapter summaries were still to be written when it became searchable."""
    total_s: float
    parse_s: float
    chunk_s: float
    embed_s: float
    store_s: float
    chunks_per_s: float
    raw_embed_s: float
    throughput_ratio: float
    """Pipeline throughput / raw embedder throughput on the same chunks (goal >= 0.85)."""


async def bench_ingest(services: Services, files: list[Path] | None = None) -> list[IngestFigures]:
    """Ingest each file as a fresh user, then re-embed its chunks raw for the ratio."""
    figures: list[IngestFigures] = []
    embedder = services.embeddings.embedder
    # warm the runtime for every input length once, as a running server would be
    embedder.embed_documents(["word " * n for n in range(4, 300, 4)])
    for path in files or default_files(services.settings.data_dir / "bench"):
        user = await resolve_user(services, f"bench-{uuid.uuid4().hex[:8]}")
        data = path.read_bytes()
        began = time.perf_counter()
        result = await ingest_bytes(services, user.id, data, path.name, source_uri=str(path))
        pending, pages = await _searchable(services, user.id, result.document_id)
        searchable = time.perf_counter() - began
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
                pages=pages,
                searchable_s=round(searchable, 2),
                summaries_pending=pending,
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


async def _searchable(
    services: Services, user_id: uuid.UUID, document_id: uuid.UUID
) -> tuple[bool, int | None]:
    """Search the document's own words (found once ingestion returns, or an error); whether
    its summaries were still pending then, and its pages."""
    from agent.db.chunks import fetch_chunks
    from agent.db.keyword_sql import BM25Params, keyword_search
    from agent.db.scope import SearchScope

    async with services.engine.connect() as conn:
        probe, status, pages = (
            await conn.execute(
                text(
                    "SELECT c.text, d.summary_status, d.page_count FROM child_chunks c JOIN documents d "
                    "ON d.id = c.document_id WHERE c.document_id = :d "
                    "ORDER BY c.chunk_index OFFSET 10 LIMIT 1"
                ),
                {"d": document_id},
            )
        ).one()
        # the store's BM25 query itself: the pipeline's time budget could cut it on a busy box
        hits = await keyword_search(
            conn,
            SearchScope(user_id=user_id),
            probe[:200],
            5,
            BM25Params.from_settings(services.settings),
        )
        owners = await fetch_chunks(conn, SearchScope(user_id=user_id), [h.chunk_id for h in hits])
    if not any(r.document_id == document_id for r in owners.values()):
        raise RuntimeError("the ingested document is not searchable")
    return status == "pending", pages
