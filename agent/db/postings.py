"""Reads behind the in-memory BM25 index: what a scope sees, and postings in bulk.

``keyword_postings`` stays the persistent, transactional source of truth (written in the
ingest transaction, deleted with the document). A process keeps a read-through copy of a
user's postings in memory (:mod:`agent.retrieval.keyword_indexes`) and checks it against
:func:`library_state` on every search, so no process can serve postings another has
changed or deleted.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from agent.db.driver import Connection, fetch_rows
from agent.db.scope import SearchScope


@dataclass(frozen=True)
class LibraryState:
    """What a scope sees right now: a fingerprint of its documents and versions, and the
    query terms (Postgres ``english`` lexemes, distinct, per query) asked for with it."""

    fingerprint: str
    query_terms: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class VisibleDocument:
    """A visible document's id, version (``updated_at`` as text) and BM25 totals."""

    id: str
    version: str
    chunks: int
    tokens: int


@dataclass(frozen=True)
class PostingsBatch:
    """The postings of some documents, read in one snapshot.

    Chunk rows are numbered from 0 in ``chunk_ids`` order; ``chunk_doc`` gives each row's
    index into ``documents``; ``terms`` maps a lexeme to its (rows, term frequencies).
    """

    documents: tuple[VisibleDocument, ...]
    chunk_ids: list[uuid.UUID]
    chunk_doc: np.ndarray
    chunk_tokens: np.ndarray
    terms: dict[str, tuple[np.ndarray, np.ndarray]]

    @property
    def postings(self) -> int:
        """How many (term, chunk) postings the batch holds."""
        return sum(len(rows) for rows, _ in self.terms.values())


_VERSION = "d.updated_at::text"


@dataclass(frozen=True)
class VisibleSet:
    """Every document a scope sees, with its fingerprint read in the same snapshot."""

    fingerprint: str
    documents: list[VisibleDocument]


def _fingerprint_sql(scope: SearchScope) -> tuple[str, dict]:
    """A scalar SQL expression of the scope's fingerprint, and its bind parameters.

    The owner's library version (``library_versions``, kept by triggers: migration 0014)
    changes with any ingest, replace, delete, share or revoke they can see, so it and the
    scope's filters name the visible set in one index read. A time-bounded scope admits more
    or fewer documents as time passes with no write at all (a rolling "last 24 hours"), so it
    is fingerprinted by the digest of what it lists instead.
    """
    if scope.created_after is not None or scope.created_before is not None:
        listed, params = scope.listed_documents_sql(f"d.id, {_VERSION} AS version")
        return (
            "(SELECT 'listed:' || md5(coalesce(string_agg(v.id::text || ':' || v.version, ',' "
            f"ORDER BY v.id), '')) FROM ({listed}) v)",
            params,
        )
    filters = (
        sorted(map(str, scope.document_ids)) if scope.document_ids is not None else None,
        scope.corpus,
        sorted(scope.doc_types) if scope.doc_types is not None else None,
        scope.include_shared,
    )
    return (
        "(SELECT md5(:scope_filters || ':' || coalesce((SELECT lv.version FROM "
        "library_versions lv WHERE lv.user_id = :scope_user), 0)))",
        {"scope_user": scope.user_id, "scope_filters": repr(filters)},
    )


async def library_state(
    conn: Connection, scope: SearchScope, queries: Sequence[str] = ()
) -> LibraryState:
    """The scope's fingerprint and the lexemes of ``queries``, in one round trip.

    Any ingest, replace, delete, share or revoke the scope can see changes the fingerprint.
    """
    fingerprint, params = _fingerprint_sql(scope)
    ((fingerprint, terms),) = await fetch_rows(
        conn,
        f"SELECT {fingerprint}, "
        "(SELECT coalesce(json_agg(tsvector_to_array("
        "to_tsvector('english', quire_keyword_text(q.t))) ORDER BY q.n), '[]') "
        "FROM unnest(CAST(:queries AS text[])) WITH ORDINALITY q(t, n))",
        {**params, "queries": list(queries)},
    )
    return LibraryState(fingerprint, tuple(tuple(t) for t in terms))


async def visible_documents(conn: AsyncConnection, scope: SearchScope) -> VisibleSet:
    """Every document the scope sees, with its version and BM25 totals, and the fingerprint
    :func:`library_state` gives that same set (one statement, so one snapshot)."""
    fingerprint, fingerprint_params = _fingerprint_sql(scope)
    listed, params = scope.listed_documents_sql(
        f"d.id::text AS id, {_VERSION} AS version, d.keyword_chunks AS chunks, "
        "d.keyword_tokens AS tokens"
    )
    rows = (
        await conn.execute(
            text(
                f"SELECT f.fingerprint, v.* FROM (SELECT {fingerprint} AS fingerprint) f "
                f"LEFT JOIN ({listed}) v ON true"
            ),
            {**params, **fingerprint_params},
        )
    ).all()
    documents = [
        VisibleDocument(r.id, r.version, int(r.chunks or 0), int(r.tokens or 0))
        for r in rows
        if r.id is not None
    ]
    return VisibleSet(rows[0].fingerprint, documents)


async def load_postings(conn: AsyncConnection, document_ids: Sequence[str]) -> PostingsBatch:
    """All postings of ``document_ids`` (ready ones; others are skipped), one snapshot.

    ``conn`` must be a connection opened with ``isolation_level="REPEATABLE READ"`` so the
    documents, their chunk numbering and their postings come from one snapshot. Each term's
    postings arrive as one ``bytea`` of big-endian (row, tf) int32 pairs: a few thousand
    rows for millions of postings.
    """
    ids = list(document_ids)
    await conn.execute(text("SET LOCAL work_mem = '256MB'"))
    docs = [
        VisibleDocument(r.id, r.version, int(r.chunks or 0), int(r.tokens or 0))
        for r in await conn.execute(
            text(
                f"SELECT d.id::text AS id, {_VERSION} AS version, d.keyword_chunks AS chunks, "
                "d.keyword_tokens AS tokens FROM documents d "
                "WHERE d.id = ANY(CAST(:ids AS uuid[])) AND d.status = 'ready' ORDER BY d.id"
            ),
            {"ids": ids},
        )
    ]
    ready = [d.id for d in docs]
    order = "ORDER BY c.document_id, c.chunk_index, c.id"
    chunk_rows = (
        await conn.execute(
            text(
                "SELECT c.id, c.document_id::text AS document_id, c.token_count FROM child_chunks c "
                f"WHERE c.document_id = ANY(CAST(:ids AS uuid[])) {order}"
            ),
            {"ids": ready},
        )
    ).all()
    slot = {d: i for i, d in enumerate(ready)}
    chunk_ids = [r.id for r in chunk_rows]
    chunk_doc = np.fromiter((slot[r.document_id] for r in chunk_rows), np.int32, len(chunk_rows))
    chunk_tokens = np.fromiter(
        (r.token_count or 0 for r in chunk_rows), np.float32, len(chunk_rows)
    )
    terms: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for term, packed in await conn.execute(
        text(
            "WITH ch AS MATERIALIZED (SELECT c.id, "
            f"(row_number() OVER ({order}) - 1)::int AS row FROM child_chunks c "
            "WHERE c.document_id = ANY(CAST(:ids AS uuid[]))) "
            "SELECT p.term, string_agg(int4send(ch.row) || int4send(p.tf), ''::bytea) "
            "FROM keyword_postings p JOIN ch ON ch.id = p.chunk_id "
            "WHERE p.document_id = ANY(CAST(:ids AS uuid[])) GROUP BY p.term"
        ),
        {"ids": ready},
    ):
        pairs = np.frombuffer(packed, dtype=">i4").reshape(-1, 2)
        terms[term] = (pairs[:, 0].astype(np.int32), pairs[:, 1].astype(np.float32))
    return PostingsBatch(tuple(docs), chunk_ids, chunk_doc, chunk_tokens, terms)
