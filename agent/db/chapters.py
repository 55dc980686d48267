"""Chapter reads: the chapters of the books in a scope (runs of parent chunks under one
chapter title, as the summary job groups them), the titles a message may name, and the child
chunks of one chapter in reading order.

Every query is confined to the documents a :class:`SearchScope` makes visible.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from agent.db.scope import SearchScope


@dataclass(frozen=True)
class BookRow:
    """A visible document that has sections (parent chunks), so chapters."""

    id: uuid.UUID
    title: str
    author: str | None


@dataclass(frozen=True)
class ChapterRun:
    """Consecutive parent chunks of one document sharing a chapter title (``None``: none).

    ``run`` counts the runs from 0 in reading order; ``first_parent`` and ``last_parent`` are
    the parents' ``chunk_index`` bounds.
    """

    document_id: uuid.UUID
    run: int
    title: str | None
    first_parent: int
    last_parent: int
    page: int | None


async def books_with_sections(
    conn: AsyncConnection, scope: SearchScope, limit: int = 50
) -> list[BookRow]:
    """The visible documents that have parent chunks, newest first (at most ``limit``)."""
    listed, params = scope.listed_documents_sql("d.id, d.title, d.author, d.created_at")
    rows = await conn.execute(
        text(
            f"SELECT v.id, v.title, v.author FROM ({listed}) v WHERE EXISTS "
            "(SELECT 1 FROM parent_chunks p WHERE p.document_id = v.id) "
            "ORDER BY v.created_at DESC, v.id LIMIT :n"
        ),
        {**params, "n": limit},
    )
    return [BookRow(r.id, r.title, r.author) for r in rows]


async def chapter_runs(
    conn: AsyncConnection, document_ids: list[uuid.UUID]
) -> dict[uuid.UUID, list[ChapterRun]]:
    """Each document's runs of parents under one chapter title, in reading order (only
    documents the caller has already checked are visible)."""
    rows = await conn.execute(
        text(
            "WITH p AS (SELECT document_id, chunk_index, chapter_title, page_start, "
            "CASE WHEN row_number() OVER w = 1 "
            "OR chapter_title IS DISTINCT FROM lag(chapter_title) OVER w THEN 1 ELSE 0 END "
            "AS opens FROM parent_chunks WHERE document_id = ANY(:ids) "
            "WINDOW w AS (PARTITION BY document_id ORDER BY chunk_index)), "
            "r AS (SELECT *, sum(opens) OVER (PARTITION BY document_id ORDER BY chunk_index) - 1 "
            "AS run FROM p) "
            "SELECT document_id, run, min(chapter_title) AS title, min(chunk_index) AS first, "
            "max(chunk_index) AS last, min(page_start) AS page FROM r "
            "GROUP BY document_id, run ORDER BY document_id, run"
        ),
        {"ids": list(document_ids)},
    )
    runs: dict[uuid.UUID, list[ChapterRun]] = {d: [] for d in document_ids}
    for r in rows:
        runs[r.document_id].append(
            ChapterRun(r.document_id, int(r.run), r.title, r.first, r.last, r.page)
        )
    return runs


async def chapter_titles(conn: AsyncConnection, scope: SearchScope, limit: int = 5000) -> list[str]:
    """The distinct chapter titles of the visible documents (what a message may name)."""
    visible, params = scope.visible_documents_sql()
    rows = await conn.execute(
        text(
            f"WITH visible AS ({visible}) SELECT DISTINCT p.chapter_title FROM parent_chunks p "
            "WHERE p.document_id IN (SELECT id FROM visible) AND p.chapter_title IS NOT NULL "
            "LIMIT :n"
        ),
        {**params, "n": limit},
    )
    return [r.chapter_title for r in rows]


async def chapter_chunks(
    conn: AsyncConnection,
    document_id: uuid.UUID,
    first_parent: int,
    last_parent: int,
    limit: int = 500,
) -> list[tuple[uuid.UUID, str]]:
    """``(id, text)`` of the child chunks under the parents ``first_parent`` ..
    ``last_parent`` of a document, in reading order (at most ``limit``)."""
    rows = await conn.execute(
        text(
            "SELECT c.id, c.text FROM child_chunks c JOIN parent_chunks p ON p.id = c.parent_id "
            "WHERE c.document_id = :d AND p.document_id = :d "
            "AND p.chunk_index BETWEEN :a AND :b ORDER BY c.chunk_index LIMIT :n"
        ),
        {"d": document_id, "a": first_parent, "b": last_parent, "n": limit},
    )
    return [(r.id, r.text) for r in rows]
