"""A user's own documents as the entry points (CLI, API) list, show and delete them."""

from __future__ import annotations

import uuid

from agent.db import documents, summaries
from agent.db.documents import DocumentRow
from agent.services import Services


async def list_user_documents(services: Services, user_id: uuid.UUID) -> list[DocumentRow]:
    """The user's own documents, newest first."""
    async with services.engine.connect() as conn:
        return await documents.list_documents(conn, user_id)


async def get_user_document(
    services: Services, user_id: uuid.UUID, document_id: uuid.UUID
) -> DocumentRow | None:
    """One of the user's own documents, or ``None`` (another user's counts as missing)."""
    async with services.engine.connect() as conn:
        return await documents.get_document(conn, user_id, document_id)


async def delete_user_document(
    services: Services, user_id: uuid.UUID, document_id: uuid.UUID
) -> bool:
    """Delete one of the user's documents with all it owns; ``False`` if there was none."""
    async with services.engine.begin() as conn:
        return await documents.delete_document(conn, user_id, document_id)


async def document_summaries(
    services: Services, user_id: uuid.UUID, document_id: uuid.UUID
) -> dict | None:
    """The summary state, executive summary, chapter summaries and table of contents of one
    of the user's own documents (``None`` if it is not theirs)."""
    settings = services.settings
    async with services.engine.connect() as conn:
        if await documents.get_document(conn, user_id, document_id) is None:
            return None
        doc = await summaries.document_for_summary(conn, document_id)
        chapters = await summaries.chapter_summaries(conn, document_id)
        toc = await summaries.table_of_contents(
            conn,
            document_id,
            max_chapters=settings.toc_max_chapters,
            max_topics=settings.toc_max_topics,
        )
    return {
        "model": doc.summary_model if doc else None,
        "global_summary": doc.global_summary if doc else None,
        "chapters": [
            {
                "title": c.chapter_title,
                "summary": c.summary,
                "topics": c.topic_labels,
                "model": c.model,
            }
            for c in chapters
        ],
        "table_of_contents": {
            "chapters": [{"title": t, "sections": s} for t, s in toc.chapters] if toc else [],
            "topics": toc.topics if toc else [],
        },
    }
