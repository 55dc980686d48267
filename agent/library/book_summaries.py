"""Reading the stored book summaries of the documents a request may see (the ``read_summary``
tool of seed 003): each book's executive summary, else its chapter summaries, the books
whose title or summary best match the query first, clipped to a character budget."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

from sqlalchemy import text

from agent.db import summaries
from agent.db.scope import SearchScope
from agent.services import Services

_MAX_BOOKS = 5
"""Most books whose summaries one read returns."""


@dataclass(frozen=True)
class BookSummary:
    """One visible book's stored summary (executive, else its chapters joined)."""

    document_id: uuid.UUID
    title: str
    summary: str


def _words(value: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", value.lower()) if len(w) > 2}


def _overlap(query: str, book: BookSummary) -> int:
    """Query words in the title (counted thrice) and in the summary."""
    wanted = _words(query)
    return 3 * len(wanted & _words(book.title)) + len(wanted & _words(book.summary))


async def _chapters_joined(services: Services, document_id: uuid.UUID) -> str:
    async with services.engine.connect() as conn:
        chapters = await summaries.chapter_summaries(conn, document_id)
    return "\n".join(
        f"{c.chapter_title or f'Part {c.chapter_index + 1}'}: {c.summary}" for c in chapters
    )


async def visible_summaries(services: Services, scope: SearchScope) -> list[BookSummary]:
    """The stored summary of every book in ``scope`` that has one (executive summary, else
    its chapter summaries); books without any are left out."""
    listed, params = scope.listed_documents_sql("d.id, d.title, d.global_summary, d.created_at")
    async with services.engine.connect() as conn:
        rows = (
            await conn.execute(text(f"SELECT * FROM ({listed}) d ORDER BY d.created_at"), params)
        ).all()
    found = []
    for row in rows:
        summary = row.global_summary or await _chapters_joined(services, row.id)
        if summary.strip():
            found.append(BookSummary(row.id, row.title, summary.strip()))
    return found


async def read_summaries(
    services: Services, scope: SearchScope, query: str, *, max_chars: int
) -> str:
    """The summaries of the books in ``scope`` as one block, best-matching ``query`` first,
    at most ``max_chars`` long; ``""`` when no book in scope has a summary yet."""
    books = await visible_summaries(services, scope)
    books.sort(key=lambda b: -_overlap(query, b))
    parts: list[str] = []
    left = max_chars
    for book in books[:_MAX_BOOKS]:
        block = f"Summary of {book.title}:\n{book.summary}"
        if left < 200:
            break
        parts.append(block[:left])
        left -= len(parts[-1]) + 2
    return "\n\n".join(parts)
