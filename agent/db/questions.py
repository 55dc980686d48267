"""Chunk reads for numbered-question lookup ("explain question 6").

Both queries are confined to the documents a :class:`SearchScope` makes visible.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from agent.db.scope import SearchScope


@dataclass(frozen=True)
class QuestionChunk:
    """A child chunk with the document fields question lookup needs."""

    id: uuid.UUID
    document_id: uuid.UUID
    document_title: str
    document_created_at: datetime
    chunk_index: int
    text: str
    page: int | None


_COLUMNS = (
    "c.id, c.document_id, d.title AS document_title, d.created_at AS document_created_at, "
    "c.chunk_index, c.text, c.page"
)


async def question_start_candidates(
    conn: AsyncConnection,
    scope: SearchScope,
    *,
    pattern: str,
    preferred: str,
    lexemes: Sequence[str],
    limit: int = 50,
) -> list[QuestionChunk]:
    """Visible child chunks whose text matches ``pattern`` (a case-insensitive Postgres regex).

    ``lexemes`` is a cheap GIN pre-filter on ``child_chunks.tsv``: a chunk is only tested
    against the regex if its tsvector holds one of them, so the caller must list every
    lexeme a match can produce. Chunks that also match ``preferred`` come first, then newer
    documents, then reading order.
    """
    if not lexemes:
        return []
    visible, params = scope.visible_documents_sql()
    query = " | ".join("'" + lexeme.replace("'", "''") + "'" for lexeme in lexemes)
    rows = await conn.execute(
        text(
            f"WITH visible AS ({visible}) SELECT {_COLUMNS} "
            "FROM child_chunks c JOIN documents d ON d.id = c.document_id "
            "WHERE c.document_id IN (SELECT id FROM visible) "
            "AND c.tsv @@ CAST(:lexemes AS tsquery) AND c.text ~* :pattern "
            "ORDER BY c.text ~* :preferred DESC, d.created_at DESC, c.document_id, c.chunk_index "
            "LIMIT :limit"
        ),
        {**params, "lexemes": query, "pattern": pattern, "preferred": preferred, "limit": limit},
    )
    return [QuestionChunk(**r._mapping) for r in rows]


async def following_chunks(
    conn: AsyncConnection,
    scope: SearchScope,
    document_id: uuid.UUID,
    after_index: int,
    limit: int,
) -> list[QuestionChunk]:
    """The next ``limit`` child chunks of a visible document after ``after_index``, in order."""
    visible, params = scope.visible_documents_sql()
    rows = await conn.execute(
        text(
            f"WITH visible AS ({visible}) SELECT {_COLUMNS} "
            "FROM child_chunks c JOIN documents d ON d.id = c.document_id "
            "WHERE c.document_id = :doc AND c.document_id IN (SELECT id FROM visible) "
            "AND c.chunk_index > :after ORDER BY c.chunk_index LIMIT :limit"
        ),
        {**params, "doc": document_id, "after": after_index, "limit": limit},
    )
    return [QuestionChunk(**r._mapping) for r in rows]
