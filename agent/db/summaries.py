"""Stored summaries: per parent (section), per chapter and per book, each with its model.

Every write is its own short transaction, so a summary job that is killed keeps what it
finished and the next run picks up from there.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection


@dataclass(frozen=True)
class ParentForSummary:
    """A parent chunk with the summary it has so far."""

    id: uuid.UUID
    chunk_index: int
    chapter_title: str | None
    section_title: str | None
    text: str
    concise_summary: str | None
    topic_labels: list[str]
    summary_model: str | None


@dataclass(frozen=True)
class ChapterSummary:
    """A stored chapter summary."""

    chapter_index: int
    chapter_title: str | None
    summary: str
    topic_labels: list[str]
    model: str


@dataclass(frozen=True)
class DocumentForSummary:
    """What a summary job needs to know about its document."""

    id: uuid.UUID
    user_id: uuid.UUID
    title: str
    author: str | None
    global_summary: str | None
    summary_model: str | None
    summary_status: str


@dataclass
class TableOfContents:
    """Chapters with their sections, and the document's topic labels (seed 000 caps)."""

    title: str
    author: str | None
    chapters: list[tuple[str, list[str]]] = field(default_factory=list)
    topics: list[str] = field(default_factory=list)


async def document_for_summary(
    conn: AsyncConnection, document_id: uuid.UUID
) -> DocumentForSummary | None:
    """The document's title, author and book-level summary state."""
    row = (
        await conn.execute(
            text(
                "SELECT id, user_id, title, author, global_summary, summary_model, summary_status "
                "FROM documents WHERE id = :d"
            ),
            {"d": document_id},
        )
    ).first()
    return DocumentForSummary(**row._mapping) if row else None


async def summarized_documents(
    conn: AsyncConnection, limit: int, document_ids: list[uuid.UUID] | None = None
) -> list[DocumentForSummary]:
    """Documents with a global summary, the last summarized first (of ``document_ids`` when
    given). Across owners: it serves the model process's prompt cache, which is shared."""
    where = "global_summary IS NOT NULL"
    params: dict = {"n": limit}
    if document_ids is not None:
        where += " AND id = ANY(:ids)"
        params["ids"] = list(document_ids)
    rows = await conn.execute(
        text(
            "SELECT id, user_id, title, author, global_summary, summary_model, summary_status "
            f"FROM documents WHERE {where} "
            "ORDER BY summary_updated_at DESC NULLS LAST LIMIT :n"
        ),
        params,
    )
    return [DocumentForSummary(**row._mapping) for row in rows]


async def parents_for_summary(
    conn: AsyncConnection, document_id: uuid.UUID
) -> list[ParentForSummary]:
    """Every parent chunk of the document, in reading order."""
    rows = await conn.execute(
        text(
            "SELECT id, chunk_index, chapter_title, section_title, text, concise_summary, "
            "coalesce(topic_labels, '{}') AS topic_labels, summary_model FROM parent_chunks "
            "WHERE document_id = :d ORDER BY chunk_index"
        ),
        {"d": document_id},
    )
    return [ParentForSummary(**r._mapping) for r in rows]


async def chapter_summaries(conn: AsyncConnection, document_id: uuid.UUID) -> list[ChapterSummary]:
    """The document's stored chapter summaries, in order."""
    rows = await conn.execute(
        text(
            "SELECT chapter_index, chapter_title, summary, topic_labels, model "
            "FROM chapter_summaries WHERE document_id = :d ORDER BY chapter_index"
        ),
        {"d": document_id},
    )
    return [ChapterSummary(**r._mapping) for r in rows]


async def save_section_summary(
    conn: AsyncConnection, parent_id: uuid.UUID, summary: str, topics: list[str], model: str
) -> None:
    """Store a parent chunk's concise summary and topic labels."""
    await conn.execute(
        text(
            "UPDATE parent_chunks SET concise_summary = :s, topic_labels = :t, "
            "summary_model = :m WHERE id = :p"
        ),
        {"p": parent_id, "s": summary, "t": topics, "m": model},
    )


async def save_chapter_summary(
    conn: AsyncConnection, document_id: uuid.UUID, chapter: ChapterSummary
) -> None:
    """Store (or replace) one chapter's summary."""
    await conn.execute(
        text(
            "INSERT INTO chapter_summaries (document_id, chapter_index, chapter_title, summary, "
            "topic_labels, model) VALUES (:d, :i, :t, :s, :l, :m) "
            "ON CONFLICT (document_id, chapter_index) DO UPDATE SET chapter_title = :t, "
            "summary = :s, topic_labels = :l, model = :m, created_at = now()"
        ),
        {
            "d": document_id,
            "i": chapter.chapter_index,
            "t": chapter.chapter_title,
            "s": chapter.summary,
            "l": chapter.topic_labels,
            "m": chapter.model,
        },
    )


async def drop_chapters_from(conn: AsyncConnection, document_id: uuid.UUID, count: int) -> None:
    """Delete chapter summaries numbered ``count`` and above (the chapters changed)."""
    await conn.execute(
        text("DELETE FROM chapter_summaries WHERE document_id = :d AND chapter_index >= :n"),
        {"d": document_id, "n": count},
    )


async def save_global_summary(
    conn: AsyncConnection, document_id: uuid.UUID, summary: str, model: str
) -> None:
    """Store the book's executive summary and mark its summaries done."""
    await conn.execute(
        text(
            "UPDATE documents SET global_summary = :s, summary_model = :m, "
            "summary_status = 'done', summary_error = NULL, summary_done = summary_total, "
            "summary_updated_at = now() WHERE id = :d"
        ),
        {"d": document_id, "s": summary, "m": model},
    )


async def set_summary_state(
    conn: AsyncConnection,
    document_id: uuid.UUID,
    status: str,
    *,
    done: int | None = None,
    total: int | None = None,
    error: str | None = None,
) -> None:
    """Record the job's status and progress (``done`` of ``total`` steps) on the document."""
    await conn.execute(
        text(
            "UPDATE documents SET summary_status = :s, "
            "summary_done = coalesce(:done, summary_done), "
            "summary_total = coalesce(:total, summary_total), summary_error = :e, "
            "summary_updated_at = now() WHERE id = :d"
        ),
        {"d": document_id, "s": status, "done": done, "total": total, "e": error},
    )


async def try_lock_document(conn: AsyncConnection, document_id: uuid.UUID) -> bool:
    """Take the document's summary lock for this connection's session, if free.

    A session-level advisory lock: it goes away with the connection, so a killed job never
    leaves a document locked.
    """
    return bool(
        (
            await conn.execute(
                text("SELECT pg_try_advisory_lock(hashtextextended(:k, 0))"),
                {"k": f"summaries:{document_id}"},
            )
        ).scalar()
    )


async def unlock_document(conn: AsyncConnection, document_id: uuid.UUID) -> None:
    """Release the lock taken by :func:`try_lock_document`."""
    await conn.execute(
        text("SELECT pg_advisory_unlock(hashtextextended(:k, 0))"),
        {"k": f"summaries:{document_id}"},
    )


async def documents_needing_summaries(conn: AsyncConnection, limit: int = 20) -> list[uuid.UUID]:
    """Documents whose summaries are pending or were interrupted, oldest first."""
    rows = await conn.execute(
        text(
            "SELECT id FROM documents WHERE summary_status IN ('pending', 'running') "
            "ORDER BY created_at LIMIT :n"
        ),
        {"n": limit},
    )
    return [r.id for r in rows]


async def table_of_contents(
    conn: AsyncConnection, document_id: uuid.UUID, *, max_chapters: int = 30, max_topics: int = 50
) -> TableOfContents | None:
    """Chapter and section titles in reading order, and the most frequent topic labels.

    Available from the moment a document is stored (titles come from ingestion); topic
    labels appear as section summaries are written.
    """
    doc = (
        await conn.execute(
            text("SELECT title, author FROM documents WHERE id = :d"), {"d": document_id}
        )
    ).first()
    if doc is None:
        return None
    toc = TableOfContents(title=doc.title, author=doc.author)
    rows = await conn.execute(
        text(
            "SELECT chapter_title, section_title FROM parent_chunks WHERE document_id = :d "
            "ORDER BY chunk_index"
        ),
        {"d": document_id},
    )
    for row in rows:
        chapter = row.chapter_title or ""
        if not toc.chapters or toc.chapters[-1][0] != chapter:
            if len(toc.chapters) == max_chapters:
                break
            toc.chapters.append((chapter, []))
        sections = toc.chapters[-1][1]
        if row.section_title and row.section_title not in sections:
            sections.append(row.section_title)
    topics = await conn.execute(
        text(
            "SELECT t.label, count(*) AS n, min(p.chunk_index) AS first FROM parent_chunks p, "
            "unnest(p.topic_labels) t(label) WHERE p.document_id = :d "
            "GROUP BY t.label ORDER BY n DESC, first LIMIT :k"
        ),
        {"d": document_id, "k": max_topics},
    )
    toc.topics = [r.label for r in topics]
    return toc
