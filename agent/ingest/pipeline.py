"""Ingestion: parse -> chunk -> embed and store, batch by batch, in one transaction.

Re-ingesting identical content is a no-op reported as a duplicate; ingesting a changed
file from the same source, or the same bytes that now parse to other text (a reader fixed
since), replaces the old document in the same transaction, its shares, chats and
corrections moved to the new one.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from agent.config import Settings
from agent.db import chats, documents, replacement
from agent.db.documents import NewChildChunk, NewDocument, NewParentChunk
from agent.ingest.chunking import ChunkDraft, chunk_document
from agent.ingest.detect import detect_document_type
from agent.ingest.document import Paragraph, usable_author
from agent.ingest.parse import ParsedDocument, UnreadableDocument, parse_bytes
from agent.ingest.sanitize import Sensitivity, pii_density, sanitize_text, sensitivity_level
from agent.models import EmbedderUnavailable
from agent.services import Services
from agent.summaries.worker import wake_summary_worker

Progress = Callable[[str, int, int], None]
"""Called as ``progress(stage, done, total)``; stages: parse, chunk, embed, store."""

AlsoStore = Callable[[AsyncConnection, uuid.UUID], Awaitable[None]]
"""Extra rows to write in the document's transaction (e.g. a transcript's parts)."""


@dataclass(frozen=True)
class IngestResult:
    """What happened to one source."""

    document_id: uuid.UUID
    title: str
    status: Literal["ingested", "duplicate", "replaced"]
    chunks: int
    parents: int
    seconds: float
    source: str | None = None
    timings: dict[str, float] = field(default_factory=dict)
    """Seconds per stage: parse, chunk (detect, redact, split), embed (the children are
    written as their batches are embedded), store (BM25 statistics, the replaced document,
    the commit)."""


def _duplicate(existing: documents.DocumentRow, started: float, source: str | None) -> IngestResult:
    return IngestResult(
        existing.id,
        existing.title,
        "duplicate",
        existing.chunk_count,
        0,
        time.perf_counter() - started,
        source,
    )


def content_hash(data: bytes) -> str:
    """The identity of a document's content."""
    return hashlib.sha256(data).hexdigest()


def _text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


PlannedChild = tuple[ChunkDraft, uuid.UUID, uuid.UUID | None]
"""A child chunk's draft, its id and its parent's id."""


@dataclass(frozen=True)
class ChunkPlan:
    """A document's type, sensitivity and chunks, ready to embed and store."""

    doc_type: str
    sensitivity: Sensitivity
    redactions: dict[str, int]
    parents: list[NewParentChunk]
    children: list[PlannedChild]


def _chunk_sensitivity(text: str, document_level: Sensitivity) -> tuple[Sensitivity, bool]:
    redacted = "[REDACTED_" in text
    return ("HIGH" if redacted else ("MEDIUM" if document_level != "LOW" else "LOW")), redacted


def plan_chunks(doc_id: uuid.UUID, parsed: ParsedDocument, settings: Settings) -> ChunkPlan:
    """Detect the type, redact PII, chunk, and give every chunk an id derived from the document.

    Detection sees the original text (PII density); everything after it sees only the
    redacted text, so no PII reaches the embedder or the database.
    """
    doc_type = detect_document_type(parsed.paragraphs, settings)
    density = pii_density(parsed.text)
    redactions: dict[str, int] = {}
    clean: list[Paragraph] = []
    for p in parsed.paragraphs:
        result = sanitize_text(p.text)
        for kind, n in result.counts.items():
            redactions[kind] = redactions.get(kind, 0) + n
        clean.append(Paragraph(result.text, p.page, p.chapter, p.section))
    level = sensitivity_level(bool(redactions), density, settings.pii_density_medium)
    drafts = chunk_document(doc_type, clean, settings, slides=parsed.file_type == "pptx")
    parents: list[NewParentChunk] = []
    children: list[tuple[ChunkDraft, uuid.UUID, uuid.UUID | None]] = []
    for index, draft in enumerate(drafts):
        if doc_type != "BOOK":
            children.append((draft, uuid.uuid5(doc_id, f"child:{len(children)}"), None))
            continue
        parent_id = uuid.uuid5(doc_id, f"parent:{index}")
        sensitivity, redacted = _chunk_sensitivity(draft.text, level)
        parents.append(
            NewParentChunk(
                id=parent_id,
                chunk_index=index,
                text=draft.text,
                content_hash=_text_hash(draft.text),
                chapter_title=draft.chapter,
                section_title=draft.section,
                page_start=draft.page,
                page_end=draft.page_end,
                sensitivity=sensitivity,
                redacted=redacted,
            )
        )
        for child in draft.children:
            children.append((child, uuid.uuid5(doc_id, f"child:{len(children)}"), parent_id))
    return ChunkPlan(doc_type, level, redactions, parents, children)


def _child(
    index: int, planned: PlannedChild, vector: list[float], plan: ChunkPlan
) -> NewChildChunk:
    """The stored form of a planned child chunk and its vector."""
    draft, chunk_id, parent_id = planned
    return NewChildChunk(
        id=chunk_id,
        chunk_index=index,
        text=draft.text,
        content_hash=_text_hash(draft.text),
        embedding=vector,
        parent_id=parent_id,
        chapter_title=draft.chapter,
        section_title=draft.section,
        page=draft.page,
        sensitivity=_chunk_sensitivity(draft.text, plan.sensitivity)[0],
        redacted="[REDACTED_" in draft.text,
    )


async def _embed_and_store(
    services: Services,
    conn: AsyncConnection,
    doc_id: uuid.UUID,
    plan: ChunkPlan,
    progress: Progress | None,
) -> None:
    """Embed the children batch by batch, writing each batch in the open transaction while
    the next is embedded: Postgres's share of the work (vectors into the HNSW graph, the
    tsvectors) runs beside the embedder instead of after it (Pride and Prejudice: 4 s of
    child inserts). Any embedder failure leaves the transaction to roll back."""
    embedder = services.embeddings.embedder
    size = max(1, services.settings.embed_batch_size)
    planned = plan.children
    texts = [draft.text for draft, _, _ in planned]

    def embed(start: int) -> asyncio.Future | None:
        if start >= len(texts):
            return None
        batch = texts[start : start + size]
        return asyncio.ensure_future(asyncio.to_thread(embedder.embed_documents, batch))

    pending = embed(0)
    try:
        for start in range(0, len(texts), size):
            try:
                vectors = await pending
            except Exception as exc:
                raise EmbedderUnavailable(
                    "The embedding model is not available, so the document could not be "
                    "indexed. Nothing was stored; try again later."
                ) from exc
            pending = embed(start + size)
            await documents.insert_children(
                conn,
                doc_id,
                [
                    _child(start + i, item, vector, plan)
                    for i, (item, vector) in enumerate(
                        zip(planned[start : start + size], vectors, strict=True)
                    )
                ],
            )
            if progress:
                progress("embed", min(start + size, len(texts)), len(texts))
    finally:
        if pending is not None:
            pending.cancel()  # a failed insert: the batch in flight is not wanted


async def ingest_parsed(
    services: Services,
    user_id: uuid.UUID,
    parsed: ParsedDocument,
    digest: str,
    *,
    source_uri: str | None = None,
    filename: str | None = None,
    corpus: str = "default",
    tags: list[str] | None = None,
    also_store: AlsoStore | None = None,
    progress: Progress | None = None,
) -> IngestResult:
    """Store an already parsed document for ``user_id`` (see module docs for the rules).

    Documents with sections (books, long documents) are stored with summaries ``pending``
    and the server's background worker, if running, is told about them. Raises
    :class:`EmbedderUnavailable` when the embedding model fails (nothing is stored).
    """
    started = time.perf_counter()
    whole = parsed.text  # joined from the paragraphs on every read
    text_digest = _text_hash(whole)
    async with services.engine.connect() as conn:
        existing = await documents.find_by_hash(conn, user_id, digest)
        # the same bytes parsed to other text (a reader fixed since, e.g. PDF hyphens): the
        # new parse replaces the stored one rather than being a duplicate of it
        reparsed = existing is not None and await replacement.parsed_differently(
            conn, existing.id, text_digest, len(whole)
        )
    if existing and not reparsed:
        return _duplicate(existing, started, source_uri)

    doc_id = uuid.uuid4()
    timings: dict[str, float] = {}
    mark = time.perf_counter()
    if progress:
        progress("chunk", 0, 1)
    plan = await asyncio.to_thread(plan_chunks, doc_id, parsed, services.settings)
    parents, planned = plan.parents, plan.children
    if not planned:
        raise UnreadableDocument(f"{filename or parsed.title} has no text to index")
    timings["chunk"], mark = time.perf_counter() - mark, time.perf_counter()
    new_doc = NewDocument(
        id=doc_id,
        user_id=user_id,
        title=sanitize_text(parsed.title).text,
        file_type=parsed.file_type,
        doc_type=plan.doc_type,
        sensitivity=plan.sensitivity,
        content_hash=digest,
        embedding_model=services.embeddings.name,
        char_count=len(whole),
        corpus=corpus,
        author=usable_author(parsed.author),
        source_uri=source_uri,
        filename=filename,
        page_count=parsed.page_count,
        metadata={**parsed.metadata, "redactions": plan.redactions, "text_hash": text_digest},
        tags=list(tags or []),
        encoding=parsed.encoding,
        summary_status="pending" if parents else "none",
    )
    status: Literal["ingested", "replaced"] = "ingested"
    try:
        async with services.engine.begin() as conn:
            if reparsed:
                previous = existing
                await replacement.release_content_hash(conn, user_id, existing.id)
            else:
                previous = (
                    await documents.find_by_source(conn, user_id, source_uri)
                    if source_uri
                    else None
                )
            await documents.insert_document_row(conn, new_doc, parents)
            await _embed_and_store(services, conn, doc_id, plan, progress)
            timings["embed"], mark = time.perf_counter() - mark, time.perf_counter()
            if progress:
                progress("store", 0, 1)
            # the replaced document goes last, so its owner's term counts (which the delete
            # updates) stay locked only while this transaction finishes
            if previous is not None:
                await replacement.move_references(conn, user_id, previous.id, doc_id)
                await documents.delete_document(conn, user_id, previous.id)
                status = "replaced"
            await documents.finish_document(conn, doc_id)
            if also_store:
                await also_store(conn, doc_id)
            await chats.record_usage(conn, user_id, documents=1)
    except IntegrityError:
        # the same content was stored concurrently: report the winner
        async with services.engine.connect() as conn:
            existing = await documents.find_by_hash(conn, user_id, digest)
        if existing is None:
            raise
        return _duplicate(existing, started, source_uri)
    timings["store"] = time.perf_counter() - mark
    if progress:
        progress("store", 1, 1)
    if parents:
        wake_summary_worker()
    return IngestResult(
        doc_id,
        parsed.title,
        status,
        len(planned),
        len(parents),
        time.perf_counter() - started,
        source_uri,
        timings,
    )


async def ingest_bytes(
    services: Services,
    user_id: uuid.UUID,
    data: bytes,
    filename: str,
    *,
    title: str | None = None,
    corpus: str = "default",
    source_uri: str | None = None,
    tags: list[str] | None = None,
    progress: Progress | None = None,
) -> IngestResult:
    """Parse and store a file's bytes (uploads, stdin, fetched pages)."""
    mark = time.perf_counter()
    if progress:
        progress("parse", 0, 1)
    settings = services.settings
    parsed = await asyncio.to_thread(
        parse_bytes,
        data,
        filename,
        title,
        max_pdf_pages=settings.max_pdf_pages,
        max_unzipped_bytes=settings.max_unzipped_bytes,
        max_chars=settings.max_document_chars,
    )
    parse_seconds = time.perf_counter() - mark
    result = await ingest_parsed(
        services,
        user_id,
        parsed,
        content_hash(data),
        source_uri=source_uri,
        filename=filename,
        corpus=corpus,
        tags=tags,
        progress=progress,
    )
    result.timings["parse"] = parse_seconds
    return replace(result, seconds=result.seconds + parse_seconds)


async def ingest_file(
    services: Services,
    user_id: uuid.UUID,
    path: Path,
    *,
    title: str | None = None,
    corpus: str = "default",
    progress: Progress | None = None,
) -> IngestResult:
    """Read, parse and store a file from disk (its absolute path is its source)."""
    data = await asyncio.to_thread(path.read_bytes)
    return await ingest_bytes(
        services,
        user_id,
        data,
        path.name,
        title=title,
        corpus=corpus,
        source_uri=str(path.resolve()),
        progress=progress,
    )
