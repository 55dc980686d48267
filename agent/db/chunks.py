"""Chunk reads: dense (pgvector HNSW) and BM25 keyword search, and lookups by id.

Every query is confined to the documents a :class:`SearchScope` makes visible.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from agent.db.documents import vector_literal
from agent.db.scope import SearchScope


@dataclass(frozen=True)
class ScoredChunkId:
    """A chunk id with the score one retriever gave it."""

    chunk_id: uuid.UUID
    score: float


@dataclass(frozen=True)
class ChunkRecord:
    """A child chunk with its document and parent, as retrieval and citations need it."""

    id: uuid.UUID
    document_id: uuid.UUID
    parent_id: uuid.UUID | None
    chunk_index: int
    text: str
    chapter_title: str | None
    section_title: str | None
    page: int | None
    document_title: str
    author: str | None
    file_type: str
    doc_type: str
    owner_id: uuid.UUID
    document_created_at: datetime
    parent_text: str | None
    tags: list[str]
    has_embedding: bool


async def dense_search(
    conn: AsyncConnection, scope: SearchScope, query_vector: Sequence[float], k: int
) -> list[ScoredChunkId]:
    """Nearest child chunks by cosine similarity (``1 - distance``), best first."""
    visible, params = scope.visible_documents_sql()
    rows = await conn.execute(
        text(
            f"WITH visible AS ({visible}) "
            "SELECT c.id, 1 - (c.embedding <=> CAST(:q AS vector)) AS similarity "
            "FROM child_chunks c WHERE c.document_id IN (SELECT id FROM visible) "
            "AND c.embedding IS NOT NULL "
            "ORDER BY c.embedding <=> CAST(:q AS vector) LIMIT :k"
        ),
        {**params, "q": vector_literal(query_vector), "k": k},
    )
    hits = [ScoredChunkId(r.id, float(r.similarity)) for r in rows]
    # relaxed_order iterative scans may return near-ties slightly out of order
    return sorted(hits, key=lambda h: h.score, reverse=True)


# Okapi BM25 in SQL over the postings of the query's terms. Corpus statistics (N, avgdl,
# df) are summed over the visible documents only.
_BM25_SQL = """
stats AS (
    SELECT coalesce(sum(d.keyword_chunks), 0)::float8 AS n,
           coalesce(sum(d.keyword_tokens), 0)::float8
               / greatest(coalesce(sum(d.keyword_chunks), 0), 1) AS avgdl
    FROM documents d WHERE d.id IN (SELECT id FROM visible)),
q AS (SELECT DISTINCT u.lexeme AS term FROM unnest(to_tsvector('english', :query)) u),
idf AS (
    SELECT q.term,
           ln(1 + (s.n - coalesce(sum(t.df), 0) + 0.5) / (coalesce(sum(t.df), 0) + 0.5)) AS idf
    FROM q CROSS JOIN stats s
    LEFT JOIN keyword_terms t
           ON t.term = q.term AND t.document_id IN (SELECT id FROM visible)
    GROUP BY q.term, s.n)
SELECT p.chunk_id AS id,
       sum(i.idf * p.tf * (:k1 + 1)
           / (p.tf + :k1 * (1 - :b + :b * p.chunk_tokens / greatest(s.avgdl, 1)))) AS score
FROM idf i
JOIN keyword_postings p ON p.term = i.term
CROSS JOIN stats s
WHERE p.document_id IN (SELECT id FROM visible)
GROUP BY p.chunk_id
ORDER BY score DESC, p.chunk_id
LIMIT :k
"""


async def keyword_search(
    conn: AsyncConnection, scope: SearchScope, query: str, k: int, k1: float, b: float
) -> list[ScoredChunkId]:
    """Okapi BM25 over the visible documents' child chunks, best first.

    Terms are Postgres ``english`` lexemes (stemmed, stop words removed) and are ORed.
    IDF and average length come from ``keyword_terms`` and per-document totals summed over
    exactly the visible documents, so scores are true BM25 for this user's corpus.
    """
    visible, params = scope.visible_documents_sql()
    rows = await conn.execute(
        text(f"WITH visible AS ({visible}), {_BM25_SQL}"),
        {**params, "query": query, "k": k, "k1": k1, "b": b},
    )
    return [ScoredChunkId(r.id, float(r.score)) for r in rows]


async def fetch_chunks(
    conn: AsyncConnection, scope: SearchScope, chunk_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, ChunkRecord]:
    """Visible child chunks by id, with document fields and parent text (one query)."""
    if not chunk_ids:
        return {}
    visible, params = scope.visible_documents_sql()
    rows = await conn.execute(
        text(
            f"WITH visible AS ({visible}) "
            "SELECT c.id, c.document_id, c.parent_id, c.chunk_index, c.text, c.chapter_title, "
            "c.section_title, c.page, d.title AS document_title, d.author, d.file_type, "
            "d.doc_type, d.user_id AS owner_id, d.created_at AS document_created_at, "
            "p.text AS parent_text, d.tags, c.embedding IS NOT NULL AS has_embedding "
            "FROM child_chunks c JOIN documents d ON d.id = c.document_id "
            "LEFT JOIN parent_chunks p ON p.id = c.parent_id "
            "WHERE c.id = ANY(:ids) AND c.document_id IN (SELECT id FROM visible)"
        ),
        {**params, "ids": list(chunk_ids)},
    )
    return {r.id: ChunkRecord(**r._mapping) for r in rows}


async def fetch_embeddings(
    conn: AsyncConnection, chunk_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, list[float]]:
    """Stored vectors of the given child chunks (ids already scoped by a search)."""
    if not chunk_ids:
        return {}
    rows = await conn.execute(
        text(
            "SELECT id, embedding::real[] AS v FROM child_chunks WHERE id = ANY(:ids) AND embedding IS NOT NULL"
        ),
        {"ids": list(chunk_ids)},
    )
    return {r.id: r.v for r in rows}


async def any_chunks(conn: AsyncConnection, scope: SearchScope, k: int) -> list[uuid.UUID]:
    """Some visible chunks, embedded or not: newest documents first, in reading order
    (the last fallback layer, when no search finds anything)."""
    visible, params = scope.visible_documents_sql()
    rows = await conn.execute(
        text(
            f"WITH visible AS ({visible}) "
            "SELECT c.id FROM child_chunks c JOIN documents d ON d.id = c.document_id "
            "WHERE c.document_id IN (SELECT id FROM visible) "
            "ORDER BY d.created_at DESC, c.chunk_index LIMIT :k"
        ),
        {**params, "k": k},
    )
    return [r.id for r in rows]


async def library_fingerprint(conn: AsyncConnection, scope: SearchScope) -> str:
    """A digest of exactly which documents (and versions) the scope sees right now.

    Any ingest, replace, delete, share or revoke changes it, so cached results keyed on it
    can never outlive the data they came from.
    """
    visible, params = scope.visible_documents_sql()
    row = await conn.execute(
        text(
            f"WITH visible AS ({visible}) SELECT md5(coalesce(string_agg(d.id::text || ':' || "
            "d.updated_at::text, ',' ORDER BY d.id), '')) FROM documents d "
            "WHERE d.id IN (SELECT id FROM visible)"
        ),
        params,
    )
    return row.scalar_one()
