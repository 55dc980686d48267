"""Dense search: small scopes among many vectors are scanned exactly, large ones by HNSW,
both giving the nearest chunks; vectors are stored inline."""

from __future__ import annotations

import numpy as np
import pytest
from sqlalchemy import text

import agent.db.chunks as chunks
from agent.db.chunks import dense_candidates, dense_search
from agent.db.scope import SearchScope
from agent.ingest.pipeline import ingest_bytes

NOTES = [
    "The lighthouse keeper polishes the brass lamp every evening.",
    "Fishing boats leave the harbour before dawn in winter.",
    "The baker sells rye bread and honey cakes on market days.",
    "A storm tore the sails of the schooner near the cliffs.",
    "Children fly kites on the dunes when the wind is steady.",
    "The village school rings its bell at eight each morning.",
]


async def _library(services, user):
    body = "\n\n".join(f"{n} ({i})" for i in range(8) for n in NOTES).encode()
    await ingest_bytes(services, user.id, body, "coast.txt")
    async with services.engine.connect() as conn:
        rows = await conn.execute(
            text(
                "SELECT c.id, vector_send(c.embedding) AS v FROM child_chunks c "
                "JOIN documents d ON d.id = c.document_id WHERE d.user_id = :u"
            ),
            {"u": user.id},
        )
        return {r.id: chunks._vector(r.v) for r in rows}


def _nearest(stored: dict, query: np.ndarray, k: int) -> list:
    ids = list(stored)
    matrix = np.stack([stored[i] / np.linalg.norm(stored[i]) for i in ids])
    order = np.argsort(-(matrix @ (query / np.linalg.norm(query))), kind="stable")
    return [ids[i] for i in order[:k]]


async def _branch_run(services, scope, vector) -> str:
    """Which branch of the nearest-chunks query ran: ``exact`` or ``hnsw``."""
    nearest, params = chunks._nearest_sql(scope)
    async with services.engine.connect() as conn:
        ran = await conn.execute(
            text(f"WITH {nearest} SELECT DISTINCT exact FROM hits"),
            {**params, "q": chunks.vector_literal(vector), "k": 5},
        )
        (exact,) = [r.exact for r in ran]
    return "exact" if exact else "hnsw"


@pytest.mark.parametrize("exact", [True, False])
async def test_both_branches_find_the_nearest_chunks(services, new_user, monkeypatch, exact):
    user = await new_user("dense-branch")
    stored = await _library(services, user)
    async with services.engine.begin() as conn:
        await conn.execute(text("ANALYZE child_chunks"))
    # exact: any scope counts as small; HNSW: none does
    monkeypatch.setattr(chunks, "EXACT_SCAN_MAX_SHARE", 1e9 if exact else 0.0)
    monkeypatch.setattr(chunks, "EXACT_SCAN_ALWAYS_CHUNKS", 1_000 if exact else 0)
    scope = SearchScope(user_id=user.id)
    vector = np.asarray(services.embeddings.embedder.embed_query("bread at the market"))
    assert await _branch_run(services, scope, vector) == ("exact" if exact else "hnsw")
    async with services.engine.connect() as conn:
        hits = await dense_search(conn, scope, vector.tolist(), 4)
        candidates, records, vectors = await dense_candidates(conn, scope, vector.tolist(), 4)
    want = _nearest(stored, vector, 4)
    assert [h.chunk_id for h in hits] == want
    assert [h.chunk_id for h in candidates] == want and set(records) == set(vectors) == set(want)
    assert "bread" in records[want[0]].text


async def test_a_small_library_among_many_vectors_is_scanned_exactly(services, new_user):
    user = await new_user("dense-small")
    chunks_seen = len(await _library(services, user))
    async with services.engine.begin() as conn:
        await conn.execute(text("ANALYZE child_chunks"))
        total = (
            await conn.execute(
                text("SELECT reltuples FROM pg_class WHERE oid = 'child_chunks'::regclass")
            )
        ).scalar()
        storage = (
            await conn.execute(
                text(
                    "SELECT attstorage FROM pg_attribute "
                    "WHERE attrelid = 'child_chunks'::regclass AND attname = 'embedding'"
                )
            )
        ).scalar()
    assert storage == "m"  # inline, not in TOAST (an exact scan reads the row alone)
    vector = services.embeddings.embedder.embed_query("storm at sea")
    own = SearchScope(user_id=user.id)
    small = max(chunks.EXACT_SCAN_ALWAYS_CHUNKS, total * chunks.EXACT_SCAN_MAX_SHARE)
    expected = "exact" if chunks_seen <= small else "hnsw"
    assert expected == "exact"  # a tiny library always is
    assert await _branch_run(services, own, vector) == expected
    nobody = SearchScope(user_id=user.id, corpus="no such corpus")  # nothing visible
    async with services.engine.connect() as conn:
        assert await dense_search(conn, nobody, vector, 5) == []


async def test_the_scope_size_counts_own_shared_and_narrowed_chunks(services, new_user):
    """The size that picks the branch: the owner's kept count plus shared documents for a
    whole library, the listed documents' sum for a narrowed one; each equals a count of the
    chunks the scope can see."""
    from agent.library.sharing import share_document

    owner, reader = await new_user("dense-size-owner"), await new_user("dense-size-reader")
    await _library(services, owner)
    shared = await ingest_bytes(services, owner.id, b"A note to share. " * 40, "share.txt")
    await _library(services, reader)
    await share_document(services, owner, str(shared.document_id), reader.name)

    async def size(scope: SearchScope) -> tuple[int, int]:
        listed, params = scope.listed_documents_sql("d.id, d.keyword_chunks")
        async with services.engine.connect() as conn:
            kept = await conn.execute(
                text(f"WITH visible AS ({listed}) SELECT {chunks._scope_chunks_sql(scope)}"),
                params,
            )
            counted = await conn.execute(
                text(
                    f"SELECT count(*) FROM child_chunks c WHERE c.document_id IN "
                    f"(SELECT id FROM ({listed}) v)"
                ),
                params,
            )
            return int(kept.scalar()), int(counted.scalar())

    for scope in (
        SearchScope(user_id=reader.id),
        SearchScope(user_id=reader.id, include_shared=False),
        SearchScope(reader.id, (shared.document_id,)),
        SearchScope(user_id=owner.id),
    ):
        kept, counted = await size(scope)
        assert kept == counted > 0
    assert (await size(SearchScope(user_id=reader.id)))[0] > (
        await size(SearchScope(user_id=reader.id, include_shared=False))
    )[0]
