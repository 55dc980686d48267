"""The book the answer benchmarks ask about: *Alice's Adventures in Wonderland* ingested
for the bench user (reused when there) with a stored global summary, so Path B answers
from it; any document's global summary is made sure of the same way."""

from __future__ import annotations

import uuid

from agent.services import Services
from bench.paths import ALICE
from bench.progress import Log, quiet

BOOK = ALICE


async def ensure_global_summary(
    services: Services, document_id: uuid.UUID, summary_spec: str = "extractive", log: Log = quiet
) -> dict:
    """Make sure ``document_id`` has a global summary; the summary's setup figures.

    A stored summary is kept, except that ``summary_spec`` other than ``extractive``
    (``--llm-summaries``) writes whatever that model has not written yet. A document too
    short to need summaries (a short article) is noted (``skipped``) and left without one.
    """
    from agent.db import summaries as store
    from agent.summaries.builder import NothingToSummarize, summarize_document
    from agent.summaries.writers import summary_writer

    async with services.engine.connect() as conn:
        doc = await store.document_for_summary(conn, document_id)
    summary: dict = {"writer": summary_spec, "reused": True, "seconds": 0.0}
    if doc is None or not doc.global_summary or summary_spec != "extractive":
        log(f"writing summaries ({summary_spec} writer)...")
        writer = await summary_writer(services.settings, summary_spec)
        try:
            report = await summarize_document(services, document_id, writer=writer)
        except NothingToSummarize as short:
            log(f"no summary: {short}")
            return {**summary, "reused": False, "skipped": str(short), "model": None, "chars": 0}
        summary.update(
            reused=False,
            seconds=round(report.seconds, 2),
            sections=report.sections,
            chapters=report.chapters,
        )
        async with services.engine.connect() as conn:
            doc = await store.document_for_summary(conn, document_id)
    summary["model"] = doc.summary_model if doc else None
    summary["chars"] = len(doc.global_summary or "") if doc else 0
    return summary


async def prepare_book(
    services: Services,
    user: str,
    *,
    summary_spec: str = "extractive",
    log: Log = quiet,
) -> tuple[uuid.UUID, dict, dict]:
    """Ingest Alice for ``user`` (reused when there) and make sure it has a global summary
    (see :func:`ensure_global_summary`). Returns the document id, the book's and the
    summary's setup figures.
    """
    from agent.ingest.pipeline import ingest_file
    from agent.library.accounts import resolve_user

    owner = await resolve_user(services, user)
    log(f"ingesting {BOOK.name} for {user}...")
    result = await ingest_file(services, owner.id, BOOK)
    book = {
        "file": BOOK.name,
        "title": result.title,
        "document_id": str(result.document_id),
        "status": result.status,
        "chunks": result.chunks,
        "parents": result.parents,
        "seconds": round(result.seconds, 2),
    }
    summary = await ensure_global_summary(services, result.document_id, summary_spec, log)
    return result.document_id, book, summary
