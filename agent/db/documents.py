"""Documents and their chunks: transactional writes, listing and deletion."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection


@dataclass
class NewParentChunk:
    """A parent chunk to store (context only, never embedded)."""

    id: uuid.UUID
    chunk_index: int
    text: str
    content_hash: str
    chapter_title: str | None = None
    section_title: str | None = None
    page_start: int | None = None
    page_end: int | None = None
    sensitivity: str = "LOW"
    redacted: bool = False


@dataclass
class NewChildChunk:
    """A retrievable chunk to store with its embedding."""

    id: uuid.UUID
    chunk_index: int
    text: str
    content_hash: str
    embedding: Sequence[float]
    parent_id: uuid.UUID | None = None
    chapter_title: str | None = None
    section_title: str | None = None
    page: int | None = None
    sensitivity: str = "LOW"
    redacted: bool = False


@dataclass
class NewDocument:
    """A document row to store."""

    id: uuid.UUID
    user_id: uuid.UUID
    title: str
    file_type: str
    doc_type: str
    content_hash: str
    embedding_model: str
    char_count: int
    corpus: str = "default"
    author: str | None = None
    source_uri: str | None = None
    filename: str | None = None
    sensitivity: str = "LOW"
    page_count: int | None = None
    metadata: dict = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)
    encoding: str | None = None
    summary_status: str = "none"
    """``pending`` for documents with parents (books, long documents), else ``none``."""


@dataclass(frozen=True)
class DocumentRow:
    """A stored document as listed to its owner."""

    id: uuid.UUID
    user_id: uuid.UUID
    title: str
    file_type: str
    doc_type: str
    source_uri: str | None
    content_hash: str
    status: str
    summary_status: str
    summary_done: int
    summary_total: int
    chunk_count: int
    page_count: int | None
    created_at: datetime


_DOC_COLUMNS = (
    "d.id, d.user_id, d.title, d.file_type, d.doc_type, d.source_uri, d.content_hash, d.status, "
    "d.summary_status, d.summary_done, d.summary_total, d.keyword_chunks AS chunk_count, d.page_count, d.created_at"
)


def _to_row(row) -> DocumentRow:
    return DocumentRow(**row._mapping)


async def find_by_hash(
    conn: AsyncConnection, user_id: uuid.UUID, content_hash: str
) -> DocumentRow | None:
    """The user's document with exactly this content, if stored."""
    row = (
        await conn.execute(
            text(
                f"SELECT {_DOC_COLUMNS} FROM documents d WHERE d.user_id = :u AND d.content_hash = :h"
            ),
            {"u": user_id, "h": content_hash},
        )
    ).first()
    return _to_row(row) if row else None


async def find_by_source(
    conn: AsyncConnection, user_id: uuid.UUID, source_uri: str
) -> DocumentRow | None:
    """The user's document ingested from ``source_uri`` (for replacing a changed file)."""
    row = (
        await conn.execute(
            text(
                f"SELECT {_DOC_COLUMNS} FROM documents d WHERE d.user_id = :u AND d.source_uri = :s "
                "ORDER BY d.created_at DESC LIMIT 1"
            ),
            {"u": user_id, "s": source_uri},
        )
    ).first()
    return _to_row(row) if row else None


def vector_literal(values: Sequence[float]) -> str:
    """A pgvector text literal for ``values``."""
    return "[" + ",".join(f"{float(v):.7g}" for v in values) + "]"


async def insert_document(
    conn: AsyncConnection,
    doc: NewDocument,
    parents: Sequence[NewParentChunk],
    children: Sequence[NewChildChunk],
) -> None:
    """Write a document, its parents and embedded children, and its BM25 statistics.

    Runs inside the caller's transaction: the caller commits all of it or none of it.
    """
    await insert_document_row(conn, doc, parents)
    await insert_children(conn, doc.id, children)
    await finish_document(conn, doc.id)


async def insert_document_row(
    conn: AsyncConnection, doc: NewDocument, parents: Sequence[NewParentChunk]
) -> None:
    """Write a document's row and its parents: the first step of :func:`insert_document`,
    for callers that write the children as they are embedded (in the same transaction)."""
    await conn.execute(
        text(
            "INSERT INTO documents (id, user_id, corpus, title, author, source_uri, filename, "
            "file_type, doc_type, sensitivity, content_hash, char_count, page_count, "
            "embedding_model, metadata, tags, encoding, summary_status, summary_total, status) VALUES (:id, "
            ":user_id, :corpus, :title, :author, :source_uri, :filename, :file_type, :doc_type, "
            ":sensitivity, :content_hash, :char_count, :page_count, :embedding_model, "
            "CAST(:metadata AS jsonb), :tags, :encoding, :summary_status, :summary_total, 'ready')"
        ),
        {
            "id": doc.id,
            "user_id": doc.user_id,
            "corpus": doc.corpus,
            "title": doc.title,
            "author": doc.author,
            "source_uri": doc.source_uri,
            "filename": doc.filename,
            "file_type": doc.file_type,
            "doc_type": doc.doc_type,
            "sensitivity": doc.sensitivity,
            "content_hash": doc.content_hash,
            "char_count": doc.char_count,
            "page_count": doc.page_count,
            "embedding_model": doc.embedding_model,
            "metadata": json.dumps(doc.metadata),
            "tags": list(doc.tags),
            "encoding": doc.encoding,
            "summary_status": doc.summary_status,
            "summary_total": len(parents),
        },
    )
    if parents:
        await conn.execute(
            text(
                "INSERT INTO parent_chunks (id, document_id, chunk_index, text, chapter_title, "
                "section_title, page_start, page_end, content_hash, sensitivity, redacted) VALUES "
                "(:id, :doc, :idx, :text, :chapter, :section, :p0, :p1, :hash, :sens, :red)"
            ),
            [
                {
                    "id": p.id,
                    "doc": doc.id,
                    "idx": p.chunk_index,
                    "text": p.text,
                    "chapter": p.chapter_title,
                    "section": p.section_title,
                    "p0": p.page_start,
                    "p1": p.page_end,
                    "hash": p.content_hash,
                    "sens": p.sensitivity,
                    "red": p.redacted,
                }
                for p in parents
            ],
        )


async def insert_children(
    conn: AsyncConnection, document_id: uuid.UUID, children: Sequence[NewChildChunk]
) -> None:
    """Write some of a document's embedded children (after its row and parents) with their
    BM25 postings. Ingestion writes them batch by batch while the embedder works on the
    next batch, so only the document's term counts are left for :func:`finish_document`."""
    if children:
        await conn.execute(
            text(
                "INSERT INTO child_chunks (id, document_id, parent_id, chunk_index, text, "
                "chapter_title, section_title, page, content_hash, embedding, sensitivity, redacted) "
                "VALUES (:id, :doc, :parent, :idx, :text, :chapter, :section, :page, :hash, "
                "CAST(:emb AS vector), :sens, :red)"
            ),
            [
                {
                    "id": c.id,
                    "doc": document_id,
                    "parent": c.parent_id,
                    "idx": c.chunk_index,
                    "text": c.text,
                    "chapter": c.chapter_title,
                    "section": c.section_title,
                    "page": c.page,
                    "hash": c.content_hash,
                    "emb": vector_literal(c.embedding),
                    "sens": c.sensitivity,
                    "red": c.redacted,
                }
                for c in children
            ],
        )
        await conn.execute(
            text(KEYWORD_POSTINGS_INSERT.format(where="d.id = :d AND c.id = ANY(:ids)")),
            {"d": document_id, "ids": [c.id for c in children]},
        )


async def finish_document(conn: AsyncConnection, document_id: uuid.UUID) -> None:
    """Count a new document's terms for BM25 (per document and in its owner's totals) once
    all its children, with their postings, are written."""
    params = {"d": document_id}
    await insert_term_counts(conn, "d.id = :d", params)
    await conn.execute(
        text(
            "UPDATE documents d SET keyword_chunks = s.n, keyword_tokens = s.tokens, "
            "updated_at = now() FROM (SELECT count(*) AS n, coalesce(sum(token_count), 0) AS tokens "
            "FROM child_chunks WHERE document_id = :d) s WHERE d.id = :d"
        ),
        params,
    )


# BM25's term-frequency factor at a reference chunk length of 60 tokens (k1=1.2, b=0.75).
# It only orders each term's postings so a search can read the best few first (see
# migration 0006, which backfills with the same formula); scores are computed exactly.
POSTING_IMPACT_SQL = "tf / (tf + 1.2 * (0.25 + 0.75 * chunk_tokens / 60.0))"

# Postings and document frequencies of the child chunks of the documents matching
# ``{where}`` (over ``documents d``); shared by ingestion and the retrieval benchmark.
KEYWORD_POSTINGS_INSERT = (
    "INSERT INTO keyword_postings (user_id, term, document_id, chunk_id, tf, chunk_tokens, impact) "
    f"SELECT user_id, term, document_id, chunk_id, tf, chunk_tokens, {POSTING_IMPACT_SQL} FROM ("
    "SELECT d.user_id, u.lexeme AS term, c.document_id, c.id AS chunk_id, "
    "coalesce(array_length(u.positions, 1), 1) AS tf, c.token_count AS chunk_tokens "
    "FROM child_chunks c JOIN documents d ON d.id = c.document_id, unnest(c.tsv) u "
    "WHERE {where}) p"
)
KEYWORD_TERMS_INSERT = (
    "INSERT INTO keyword_terms (term, document_id, df) "
    "SELECT u.lexeme, c.document_id, count(*) FROM child_chunks c "
    "JOIN documents d ON d.id = c.document_id, unnest(c.tsv) u "
    "WHERE {where} GROUP BY u.lexeme, c.document_id"
)

# Adds (``{sign}`` empty) or takes back (``-``) the ``keyword_terms`` of the documents matching
# ``{where}`` (over ``documents d``) in their owners' term counts (migration 0012). Rows go in
# term order, so two transactions touching one owner's counts wait instead of deadlocking.
OWNER_TERMS_UPDATE = (
    "INSERT INTO keyword_owner_terms AS o (user_id, term, df) "
    "SELECT d.user_id, t.term, {sign}sum(t.df) FROM keyword_terms t "
    "JOIN documents d ON d.id = t.document_id WHERE {where} "
    "GROUP BY d.user_id, t.term ORDER BY d.user_id, t.term "
    "ON CONFLICT (user_id, term) DO UPDATE SET df = o.df + excluded.df"
)


async def insert_term_counts(conn: AsyncConnection, where: str, params: dict) -> None:
    """Per-document term counts and the owners' term counts of the documents matching
    ``where`` (over ``documents d``), from their child chunks' tsvectors."""
    await conn.execute(text(KEYWORD_TERMS_INSERT.format(where=where)), params)
    await conn.execute(text(OWNER_TERMS_UPDATE.format(sign="", where=where)), params)


async def insert_keyword_stats(conn: AsyncConnection, where: str, params: dict) -> None:
    """Postings and term counts of the documents matching ``where`` (over ``documents d``)
    at once: the benchmark's bulk load (ingestion writes postings batch by batch)."""
    await conn.execute(text(KEYWORD_POSTINGS_INSERT.format(where=where)), params)
    await insert_term_counts(conn, where, params)


async def _take_back_owner_terms(conn: AsyncConnection, document_id: uuid.UUID) -> None:
    """The document's terms out of its owner's counts (before its ``keyword_terms`` go)."""
    await conn.execute(
        text(OWNER_TERMS_UPDATE.format(sign="-", where="d.id = :d")), {"d": document_id}
    )
    await conn.execute(
        text(
            "DELETE FROM keyword_owner_terms o USING keyword_terms t, documents d "
            "WHERE t.document_id = :d AND d.id = :d AND o.user_id = d.user_id "
            "AND o.term = t.term AND o.df <= 0"
        ),
        {"d": document_id},
    )


async def delete_document(
    conn: AsyncConnection, user_id: uuid.UUID, document_id: uuid.UUID
) -> bool:
    """Delete one of the user's documents with every chunk, vector and keyword entry."""
    owned = await conn.execute(
        text("SELECT 1 FROM documents WHERE id = :d AND user_id = :u FOR UPDATE"),
        {"d": document_id, "u": user_id},
    )
    if owned.first() is None:
        return False
    await _take_back_owner_terms(conn, document_id)
    result = await conn.execute(
        text("DELETE FROM documents WHERE id = :d AND user_id = :u"),
        {"d": document_id, "u": user_id},
    )
    return result.rowcount > 0


async def get_document(
    conn: AsyncConnection, user_id: uuid.UUID, document_id: uuid.UUID
) -> DocumentRow | None:
    """One of the user's own documents."""
    row = (
        await conn.execute(
            text(f"SELECT {_DOC_COLUMNS} FROM documents d WHERE d.id = :d AND d.user_id = :u"),
            {"d": document_id, "u": user_id},
        )
    ).first()
    return _to_row(row) if row else None


async def list_documents(conn: AsyncConnection, user_id: uuid.UUID) -> list[DocumentRow]:
    """The user's own documents, newest first."""
    rows = await conn.execute(
        text(
            f"SELECT {_DOC_COLUMNS} FROM documents d WHERE d.user_id = :u ORDER BY d.created_at DESC"
        ),
        {"u": user_id},
    )
    return [_to_row(r) for r in rows]
