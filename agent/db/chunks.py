"""Chunk reads: dense search (pgvector HNSW or an exact scan) and lookups by id; BM25 in
SQL is :mod:`agent.db.keyword_sql`.

Every query is confined to the documents a :class:`SearchScope` makes visible.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

import numpy as np
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from agent.db.documents import vector_literal
from agent.db.driver import Connection, fetch_rows
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


EXACT_SCAN_MAX_CHUNKS = 20_000
"""A scope seeing at most this many chunks, and ..."""
EXACT_SCAN_MAX_SHARE = 0.1
"""... at most this share of every stored vector, is searched exactly, not by HNSW."""
EXACT_SCAN_ALWAYS_CHUNKS = 1_000
"""A scope seeing at most this many chunks is always searched exactly (~1 ms): a filtered
HNSW walk can miss a tiny library's chunks among many others' (and a table not yet
analyzed has no vector count to compare with)."""

_EXACT = (
    "SELECT c.id AS hit, c.embedding <=> CAST(:q AS vector) AS distance, true AS exact "
    "FROM child_chunks c WHERE (SELECT small FROM scope_size) "
    "AND c.document_id IN (SELECT id FROM visible) AND c.embedding IS NOT NULL "
    # "+ 0": an expression the HNSW index cannot order by, so every vector is compared
    "ORDER BY (c.embedding <=> CAST(:q AS vector)) + 0 LIMIT :k"
)
# Each neighbour the HNSW walk yields is checked by its document's key (a nested loop over
# the walk, which keeps its order): a semi join with the listed documents scanned the list
# once per neighbour (45 ms at 10,000 documents, measured).
_APPROXIMATE = (
    "SELECT c.id AS hit, c.embedding <=> CAST(:q AS vector) AS distance, false AS exact "
    "FROM child_chunks c JOIN documents d ON d.id = c.document_id "
    "WHERE NOT (SELECT small FROM scope_size) AND {visible_document} "
    "AND c.embedding IS NOT NULL ORDER BY c.embedding <=> CAST(:q AS vector) LIMIT :k"
)
_SCOPE_SIZE = (
    "SELECT {chunks} <= least(:exact_max, greatest(:exact_always, "
    "(SELECT c.reltuples FROM pg_class c WHERE c.oid = 'child_chunks'::regclass) * :exact_share"
    ")) AS small"
)


def _scope_chunks_sql(scope: SearchScope) -> str:
    """A scalar SQL expression of how many chunks ``scope`` sees.

    A whole library reads its owner's count (``library_versions``, kept by triggers) plus the
    documents shared with them: listing 10,000 documents to sum them took 10 ms a search. A
    narrowed scope sums what ``visible`` lists.
    """
    if scope.narrowed:
        return "(SELECT coalesce(sum(v.keyword_chunks), 0) FROM visible v)"
    own = "coalesce((SELECT lv.chunks FROM library_versions lv WHERE lv.user_id = :scope_user), 0)"
    shared, _ = scope.shared_documents_sql("d.keyword_chunks")
    if shared is None:
        return f"({own})"
    return f"({own} + (SELECT coalesce(sum(s.keyword_chunks), 0) FROM ({shared}) s))"


def _nearest_sql(scope: SearchScope) -> tuple[str, dict]:
    """``visible``, ``scope_size`` and ``hits (hit, distance, exact)``, the scope's nearest
    ``:k`` chunks to ``:q``, as WITH entries, with their bind parameters.

    A small scope among many vectors (a small library on a shared server, one book of a
    large one) is scanned exactly: pgvector's filtered HNSW search then rejects most of the
    graph's neighbours as another owner's (63 ms p50 for 10k chunks among 1.1M, measured),
    while reading its own vectors, stored inline (migration 0013), takes ~1 us each. The
    size is computed once, first; only the branch it selects runs (a large library's
    documents are then never listed).
    """
    listed, params = scope.listed_documents_sql("d.id, d.keyword_chunks")
    visible_document, _ = scope.document_filter_sql()  # same parameters as the listing
    approximate = _APPROXIMATE.format(visible_document=visible_document)
    params |= {
        "exact_max": EXACT_SCAN_MAX_CHUNKS,
        "exact_share": EXACT_SCAN_MAX_SHARE,
        "exact_always": EXACT_SCAN_ALWAYS_CHUNKS,
    }
    return (
        f"visible AS ({listed}), "
        f"scope_size AS MATERIALIZED ({_SCOPE_SIZE.format(chunks=_scope_chunks_sql(scope))}), "
        f"hits AS MATERIALIZED (({_EXACT}) UNION ALL ({approximate}))",
        params,
    )


async def dense_search(
    conn: AsyncConnection, scope: SearchScope, query_vector: Sequence[float], k: int
) -> list[ScoredChunkId]:
    """Nearest child chunks by cosine similarity (``1 - distance``), best first."""
    nearest, params = _nearest_sql(scope)
    rows = await conn.execute(
        text(f"WITH {nearest} SELECT h.hit AS id, 1 - h.distance AS similarity FROM hits h"),
        {**params, "q": vector_literal(query_vector), "k": k},
    )
    hits = [ScoredChunkId(r.id, float(r.similarity)) for r in rows]
    # relaxed_order iterative scans may return near-ties slightly out of order
    return sorted(hits, key=lambda h: h.score, reverse=True)


async def dense_candidates(
    conn: Connection, scope: SearchScope, query_vector: Sequence[float], k: int
) -> tuple[list[ScoredChunkId], dict[uuid.UUID, ChunkRecord], dict[uuid.UUID, np.ndarray]]:
    """:func:`dense_search` plus its hits' records and stored vectors, in one round trip.

    Records come without ``parent_text`` (2-3.5k characters each, most of the bytes): the
    pipeline reads only the chosen chunks' parents, with :func:`with_parent_texts`.
    """
    nearest, params = _nearest_sql(scope)
    sql = (
        f"WITH {nearest} "
        f"SELECT {_CANDIDATE_COLUMNS}, vector_send(c.embedding) AS vector, h.distance "
        "FROM hits h JOIN child_chunks c ON c.id = h.hit "
        "JOIN documents d ON d.id = c.document_id"
    )
    # float8[] cast to vector: sent in binary, ~0.3 ms cheaper than the text literal
    params |= {"q": [float(x) for x in query_vector], "k": k}
    hits, records, vectors = [], {}, {}
    for record, vector, distance in await _read_candidates(conn, sql, params):
        records[record.id] = record
        if vector is not None:
            vectors[record.id] = vector
        hits.append(ScoredChunkId(record.id, 1 - float(distance)))
    # relaxed_order iterative scans may return near-ties slightly out of order
    hits.sort(key=lambda h: h.score, reverse=True)
    return hits, records, vectors


async def candidate_records(
    conn: Connection, scope: SearchScope, chunk_ids: Sequence[uuid.UUID]
) -> tuple[dict[uuid.UUID, ChunkRecord], dict[uuid.UUID, np.ndarray]]:
    """Records (without ``parent_text``) and stored vectors of the visible ``chunk_ids``,
    read like :func:`dense_candidates` reads its hits."""
    if not chunk_ids:
        return {}, {}
    where, params = scope.document_filter_sql()
    sql = (
        f"SELECT {_CANDIDATE_COLUMNS}, vector_send(c.embedding) AS vector, NULL AS distance "
        "FROM child_chunks c JOIN documents d ON d.id = c.document_id "
        f"WHERE c.id = ANY(CAST(:ids AS uuid[])) AND {where}"
    )
    records, vectors = {}, {}
    for record, vector, _ in await _read_candidates(conn, sql, {**params, "ids": list(chunk_ids)}):
        records[record.id] = record
        if vector is not None:
            vectors[record.id] = vector
    return records, vectors


async def child_records(
    conn: Connection, scope: SearchScope, parent_ids: Sequence[uuid.UUID]
) -> list[ChunkRecord]:
    """The visible child chunks of ``parent_ids`` (without ``parent_text`` or vectors), in
    document order: the siblings a parent window shows around a retrieved child."""
    if not parent_ids:
        return []
    where, params = scope.document_filter_sql()
    sql = (
        f"SELECT {_CANDIDATE_COLUMNS}, NULL::bytea AS vector, NULL AS distance "
        "FROM child_chunks c JOIN documents d ON d.id = c.document_id "
        f"WHERE c.parent_id = ANY(CAST(:parents AS uuid[])) AND {where} "
        "ORDER BY c.document_id, c.chunk_index"
    )
    rows = await _read_candidates(conn, sql, {**params, "parents": list(parent_ids)})
    return [record for record, _, _ in rows]


async def _read_candidates(
    conn: Connection, sql: str, params: dict
) -> list[tuple[ChunkRecord, np.ndarray | None, float | None]]:
    """Rows of ``_CANDIDATE_COLUMNS`` + vector + distance as (record, vector, distance).

    The hottest reads of a search go to psycopg directly, in binary (:mod:`agent.db.driver`):
    SQLAlchemy's row handling and the hex form of the vectors cost more than the query
    (8 ms vs 4.5 ms for 80 candidates).
    """
    rows = await fetch_rows(conn, sql, params)
    fields = len(_RECORD_FIELDS)
    return [
        (
            ChunkRecord(*row[:fields]),
            None if row[fields] is None else _vector(row[fields]),
            row[fields + 1],
        )
        for row in rows
    ]


def _vector(sent: bytes) -> np.ndarray:
    """A vector from pgvector's binary form (``vector_send``): int16 dim, int16 unused, then
    big-endian float32s. ~50x cheaper than parsing the text form."""
    return np.frombuffer(sent, dtype=">f4", offset=4).astype(np.float32)


_CHUNK_COLUMNS = (
    "c.id, c.document_id, c.parent_id, c.chunk_index, c.text, c.chapter_title, "
    "c.section_title, c.page, d.title AS document_title, d.author, d.file_type, "
    "d.doc_type, d.user_id AS owner_id, d.created_at AS document_created_at, "
    "p.text AS parent_text, d.tags, c.embedding IS NOT NULL AS has_embedding"
)
_CANDIDATE_COLUMNS = _CHUNK_COLUMNS.replace("p.text AS parent_text", "NULL::text AS parent_text")
_RECORD_FIELDS = tuple(ChunkRecord.__dataclass_fields__)


async def with_parent_texts(conn: Connection, records: Sequence[ChunkRecord]) -> list[ChunkRecord]:
    """``records`` with ``parent_text`` filled in where it is missing (one read).

    Only for records already read under a scope: a parent belongs to its child's document.
    """
    wanted = {r.parent_id for r in records if r.parent_id and r.parent_text is None}
    if not wanted:
        return list(records)
    rows = await fetch_rows(
        conn, "SELECT id, text FROM parent_chunks WHERE id = ANY(:ids)", {"ids": list(wanted)}
    )
    texts = dict(rows)
    return [
        replace(r, parent_text=texts.get(r.parent_id)) if r.parent_id in texts else r
        for r in records
    ]


async def fetch_chunks(
    conn: Connection, scope: SearchScope, chunk_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, ChunkRecord]:
    """Visible child chunks by id, with document fields and parent text (one query)."""
    if not chunk_ids:
        return {}
    visible, params = scope.visible_documents_sql()
    rows = await fetch_rows(
        conn,
        f"WITH visible AS ({visible}) SELECT {_CHUNK_COLUMNS} "
        "FROM child_chunks c JOIN documents d ON d.id = c.document_id "
        "LEFT JOIN parent_chunks p ON p.id = c.parent_id "
        "WHERE c.id = ANY(:ids) AND c.document_id IN (SELECT id FROM visible)",
        {**params, "ids": list(chunk_ids)},
    )
    return {row[0]: ChunkRecord(*row) for row in rows}


async def any_chunks(conn: Connection, scope: SearchScope, k: int) -> list[uuid.UUID]:
    """Some visible chunks, embedded or not: newest documents first, in reading order
    (the last fallback layer, when no search finds anything).

    Only the ``k`` newest documents can hold the first ``k`` chunks, so only their chunks
    are read (from the (document, chunk_index) index), never the whole library's.
    """
    listed, params = scope.listed_documents_sql("d.id, d.created_at")
    rows = await fetch_rows(
        conn,
        f"SELECT c.id FROM (SELECT * FROM ({listed}) v ORDER BY v.created_at DESC, v.id "
        "LIMIT :k) d CROSS JOIN LATERAL (SELECT c.id, c.chunk_index FROM child_chunks c "
        "WHERE c.document_id = d.id ORDER BY c.chunk_index LIMIT :k) c "
        "ORDER BY d.created_at DESC, d.id, c.chunk_index LIMIT :k",
        {**params, "k": k},
    )
    return [row[0] for row in rows]
