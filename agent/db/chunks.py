"""Chunk reads: dense (pgvector HNSW) and BM25 keyword search, and lookups by id.

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

_NEAREST = (
    "SELECT c.id AS hit, c.embedding <=> CAST(:q AS vector) AS distance, {exact} AS exact "
    "FROM child_chunks c "
    "WHERE {gate} AND c.document_id IN (SELECT id FROM visible) AND c.embedding IS NOT NULL "
    "ORDER BY {order} LIMIT :k"
)
_SMALL_SCOPE = (
    "(SELECT coalesce(sum(v.keyword_chunks), 0) FROM visible v) <= least(:exact_max, "
    "(SELECT c.reltuples FROM pg_class c WHERE c.oid = 'child_chunks'::regclass) * :exact_share)"
)


def _nearest_sql(scope: SearchScope) -> tuple[str, dict]:
    """``visible`` and ``hits (hit, distance, exact)``, the scope's nearest ``:k`` chunks to ``:q``,
    as WITH entries, with their bind parameters.

    A small scope among many vectors (a small library on a shared server, one book of a
    large one) is scanned exactly: pgvector's filtered HNSW search then rejects most of the
    graph's neighbours as another owner's (63 ms p50 for 10k chunks among 1.1M, measured),
    while reading its own vectors, stored inline (migration 0013), takes ~1 us each. Only
    the branch whose condition holds runs (the conditions are evaluated once, first).
    """
    listed, params = scope.listed_documents_sql("d.id, d.keyword_chunks")
    exact = _NEAREST.format(
        exact="true",
        gate=_SMALL_SCOPE,
        # "+ 0": an expression the HNSW index cannot order by, so every vector is compared
        order="(c.embedding <=> CAST(:q AS vector)) + 0",
    )
    approx = _NEAREST.format(
        exact="false", gate=f"NOT {_SMALL_SCOPE}", order="c.embedding <=> CAST(:q AS vector)"
    )
    params |= {"exact_max": EXACT_SCAN_MAX_CHUNKS, "exact_share": EXACT_SCAN_MAX_SHARE}
    return f"visible AS ({listed}), hits AS MATERIALIZED (({exact}) UNION ALL ({approx}))", params


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


# Okapi BM25 in SQL. Corpus statistics (N, avgdl, df) are summed over the visible
# documents only, so scores are true BM25 for exactly what the user may read.
_BM25_STATS = """
stats AS (
    SELECT coalesce(sum(v.keyword_chunks), 0)::float8 AS n,
           greatest(coalesce(sum(v.keyword_tokens), 0)::float8
                    / greatest(coalesce(sum(v.keyword_chunks), 0), 1), 1) AS avgdl
    FROM visible v),
q AS (SELECT DISTINCT u.lexeme AS term FROM unnest(to_tsvector('english', :query)) u),
shared AS MATERIALIZED (SELECT v.id FROM visible v WHERE v.user_id <> :scope_user),
"""

# IDF of each query term, its document frequency summed over every visible document
# (narrowed scopes: a corpus, type, time window or named documents).
_IDF_PER_DOCUMENT = """
idf AS (
    SELECT q.term, coalesce(sum(t.df), 0) AS df,
           ln(1 + (s.n - coalesce(sum(t.df), 0) + 0.5) / (coalesce(sum(t.df), 0) + 0.5)) AS idf
    FROM q CROSS JOIN stats s
    LEFT JOIN keyword_terms t
           ON t.term = q.term AND t.document_id IN (SELECT id FROM visible)
    GROUP BY q.term, s.n)
"""

# The same IDF for a whole library: the owner's count (one row a term, migration 0012) plus
# the documents shared with them, probed one by one (OFFSET 0 keeps it a probe: few shares).
_IDF_PER_OWNER = """
idf AS (
    SELECT q.term, f.df, ln(1 + (s.n - f.df + 0.5) / (f.df + 0.5)) AS idf
    FROM q CROSS JOIN stats s CROSS JOIN LATERAL (
        SELECT coalesce((SELECT o.df FROM keyword_owner_terms o
                         WHERE o.user_id = :scope_user AND o.term = q.term), 0)
             + coalesce((SELECT sum(t.df) FROM shared sd CROSS JOIN LATERAL (
                             SELECT t.df FROM keyword_terms t
                             WHERE t.term = q.term AND t.document_id = sd.id OFFSET 0) t), 0)
             AS df) f)
"""


def _bm25_term(p: str) -> str:
    """One posting's BM25 contribution (``i`` the term's idf row, ``s`` the stats row)."""
    return (
        f"i.idf * {p}.tf * (:k1 + 1) / ({p}.tf + :k1 * (1 - :b + :b * {p}.chunk_tokens / s.avgdl))"
    )


# Narrow scopes (named documents): every posting of the query terms in those documents,
# read index-only from the (document_id, term, chunk_id) key, scored exactly.
_BM25_EXACT_SQL = f"""
SELECT p.chunk_id AS id, sum({_bm25_term("p")}) AS score
FROM idf i CROSS JOIN stats s
JOIN keyword_postings p ON p.term = i.term AND p.document_id IN (SELECT id FROM visible)
GROUP BY p.chunk_id
ORDER BY score DESC, p.chunk_id
LIMIT :k
"""

# Whole libraries: only the ``per_term`` highest-impact postings of each term are read
# (index-only, from (user_id, term, impact DESC) for the user's own documents; from the
# key for documents shared with them), summed into a partial score; the ``rescore`` best
# candidates then get their exact score from all their postings. A chunk can only be
# missed if it is outside every term's top postings, i.e. weak on every term.
# ``{own_filter}`` narrows the own-documents scan when the scope filters by corpus, type or
# time; without one the scan walks the index in impact order and stops after ``per_term``
# rows (a filter there makes Postgres read the term's whole list first). Candidates are
# always checked against ``visible``.
_BM25_IMPACT_SQL = """
cand AS (
    SELECT c.document_id, c.chunk_id, sum(c.contribution) AS partial
    FROM idf i CROSS JOIN stats s CROSS JOIN LATERAL (
        (SELECT p.document_id, p.chunk_id, {term_p} AS contribution
         FROM keyword_postings p
         WHERE p.user_id = :scope_user AND p.term = i.term {own_filter}
         ORDER BY p.impact DESC LIMIT CASE WHEN i.df <= :full_list THEN NULL ELSE :per_term END)
        UNION ALL
        (SELECT p.document_id, p.chunk_id, {term_p} AS contribution
         FROM shared sd CROSS JOIN LATERAL (
             SELECT * FROM keyword_postings p
             WHERE p.document_id = sd.id AND p.term = i.term OFFSET 0) p
         ORDER BY p.impact DESC LIMIT CASE WHEN i.df <= :full_list THEN NULL ELSE :per_term END)
    ) c
    GROUP BY c.document_id, c.chunk_id
    ORDER BY partial DESC
    LIMIT :rescore)
SELECT c.chunk_id AS id, sum({term_p}) AS score
FROM cand c JOIN documents d ON d.id = c.document_id
CROSS JOIN idf i CROSS JOIN stats s
CROSS JOIN LATERAL (
    -- OFFSET 0 keeps this a per-candidate key probe instead of a join over whole lists
    SELECT p.tf, p.chunk_tokens FROM keyword_postings p
    WHERE p.document_id = c.document_id AND p.term = i.term AND p.chunk_id = c.chunk_id
    OFFSET 0) p
-- each candidate's document is checked by its key (a join against the listed visible set
-- was planned as a nested loop over it: 250 x 10,000 comparisons on a 1M-chunk library)
WHERE {visible_document}
GROUP BY c.chunk_id
ORDER BY score DESC, c.chunk_id
LIMIT :k
"""


# Up to this many named documents are scored over all their postings; more are treated as
# a library narrowed by a filter.
_EXACT_MAX_DOCUMENTS = 20


@dataclass(frozen=True)
class BM25Params:
    """Okapi BM25 constants and how much of each posting list a library-wide search reads."""

    k1: float = 1.2
    b: float = 0.75
    full_list: int = 20_000
    top_postings: int = 1_000
    rescore: int = 250

    @classmethod
    def from_settings(cls, settings) -> BM25Params:
        """The parameters configured in :class:`agent.config.Settings`."""
        return cls(
            settings.bm25_k1,
            settings.bm25_b,
            settings.bm25_full_list_postings,
            settings.bm25_top_postings,
            settings.bm25_rescore,
        )


async def keyword_search(
    conn: AsyncConnection,
    scope: SearchScope,
    query: str,
    k: int,
    bm25: BM25Params | None = None,
) -> list[ScoredChunkId]:
    """Okapi BM25 over the visible documents' child chunks, best first.

    Terms are Postgres ``english`` lexemes (stemmed, stop words removed) and are ORed.
    IDF and average length are those of exactly the visible documents: the owner's term
    counts (``keyword_owner_terms``) plus shared documents' ``keyword_terms`` for a whole
    library, ``keyword_terms`` summed per document for a narrowed one. A scope naming its documents is scored over all their
    postings; a whole library reads each term's highest-impact postings first and rescores
    the best candidates exactly, so cost no longer grows with how common a term is.
    """
    bm25 = bm25 or BM25Params()
    # the visible documents with their BM25 totals, listed once (no scan of other users')
    visible, params = scope.listed_documents_sql(
        "d.id, d.user_id, d.keyword_chunks, d.keyword_tokens"
    )
    params = {**params, "query": query, "k": k, "k1": bm25.k1, "b": bm25.b}
    exhaustive = scope.document_ids is not None and len(scope.document_ids) <= _EXACT_MAX_DOCUMENTS
    narrowed = scope.narrowed
    idf = _IDF_PER_DOCUMENT if narrowed else _IDF_PER_OWNER
    if exhaustive:
        sql = f"WITH visible AS ({visible}), {_BM25_STATS} {idf} {_BM25_EXACT_SQL}"
    else:
        visible_document, _ = scope.document_filter_sql()
        impact = _BM25_IMPACT_SQL.format(
            term_p=_bm25_term("p"),
            own_filter="AND p.document_id IN (SELECT id FROM visible)" if narrowed else "",
            visible_document=visible_document,
        )
        sql = f"WITH visible AS ({visible}), {_BM25_STATS} {idf}, {impact}"
        params |= {
            "full_list": bm25.full_list,
            "per_term": bm25.top_postings,
            "rescore": max(5 * k, bm25.rescore),
        }
    # Unfiltered, tens of thousands of postings are grouped by chunk and the planner, unable
    # to estimate the per-term LIMITs, would sort them (~2x slower than hashing). Not with a
    # filter: there it would then check each posting against a list of the visible documents
    # (measured 10x slower on SciFact) instead of hashing them.
    planner = {"plan_cache_mode": "force_custom_plan"}
    if not exhaustive and not narrowed:
        planner["enable_sort"] = "off"
    # Custom plans only: psycopg prepares a statement run five times and Postgres may then
    # plan it once for any parameters, blind to how common the terms are and how many
    # documents are visible (26 -> 38 ms measured on the 100k-chunk benchmark).
    await conn.execute(
        text(
            "SELECT set_config(s.name, s.value, true) "
            "FROM unnest(CAST(:names AS text[]), CAST(:values AS text[])) s(name, value)"
        ),
        {"names": list(planner), "values": list(planner.values())},
    )
    rows = await conn.execute(text(sql), params)
    hits = [ScoredChunkId(r.id, float(r.score)) for r in rows]
    # the caller's later queries in this transaction plan as usual
    await conn.execute(
        text("SELECT set_config(name, reset_val, true) FROM pg_settings WHERE name = ANY(:n)"),
        {"n": list(planner)},
    )
    return hits


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
