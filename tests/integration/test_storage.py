"""Ingestion and retrieval against the real embedded Postgres + pgvector."""

import uuid
from dataclasses import replace

import pytest
from sqlalchemy import text

from agent.db import documents
from agent.db.engine import EmbeddingMismatchError, ensure_embedding_store
from agent.db.scope import SearchScope
from agent.ingest.pipeline import ingest_bytes, ingest_file
from agent.retrieval.citations import citation_id
from agent.retrieval.hybrid import hybrid_search
from tests.support.paths import ALICE


async def _count(services, sql: str, **params) -> int:
    async with services.engine.connect() as conn:
        return (await conn.execute(text(sql), params)).scalar()


async def test_ingest_stores_parents_children_vectors_and_keyword_stats(services, alice_reader):
    user, result = alice_reader
    assert result.status in ("ingested", "duplicate")
    doc = result.document_id
    children = await _count(
        services, "SELECT count(*) FROM child_chunks WHERE document_id = :d", d=doc
    )
    parents = await _count(
        services, "SELECT count(*) FROM parent_chunks WHERE document_id = :d", d=doc
    )
    embedded = await _count(
        services,
        "SELECT count(*) FROM child_chunks WHERE document_id = :d AND embedding IS NOT NULL",
        d=doc,
    )
    assert children > 150 and parents > 20 and embedded == children
    dims = await _count(
        services,
        "SELECT vector_dims(embedding) FROM child_chunks WHERE document_id = :d LIMIT 1",
        d=doc,
    )
    assert dims == services.embeddings.dimension
    df = await _count(
        services, "SELECT df FROM keyword_terms WHERE document_id = :d AND term = 'dinah'", d=doc
    )
    assert df >= 5
    chaptered = await _count(
        services,
        "SELECT count(*) FROM child_chunks WHERE document_id = :d AND chapter_title LIKE 'CHAPTER%'",
        d=doc,
    )
    assert chaptered >= children - 2  # only the title page precedes CHAPTER I
    async with services.engine.connect() as conn:
        stored = await conn.execute(
            text("SELECT embedding_model FROM documents WHERE id = :d"), {"d": doc}
        )
        assert stored.scalar() == services.embeddings.name


async def test_reingest_same_content_is_a_noop(services, alice_reader):
    user, first = alice_reader
    before = await _count(services, "SELECT count(*) FROM child_chunks")
    again = await ingest_file(services, user.id, ALICE)
    assert again.status == "duplicate"
    assert again.document_id == first.document_id
    assert await _count(services, "SELECT count(*) FROM child_chunks") == before
    assert (
        await _count(services, "SELECT count(*) FROM documents WHERE user_id = :u", u=user.id) == 1
    )


async def test_changed_file_replaces_document_and_delete_removes_everything(
    services, new_user, tmp_path
):
    user = await new_user("editor")
    path = tmp_path / "notes.md"
    path.write_text("# Notes\n\nThe launch code word is PINEAPPLE. It was chosen in March.\n")
    first = await ingest_file(services, user.id, path)
    path.write_text("# Notes\n\nThe launch code word is MANGO. It was changed in May.\n")
    second = await ingest_file(services, user.id, path)
    assert second.status == "replaced"
    assert (
        await _count(services, "SELECT count(*) FROM documents WHERE user_id = :u", u=user.id) == 1
    )
    assert (
        await _count(
            services,
            "SELECT count(*) FROM child_chunks WHERE document_id = :d",
            d=first.document_id,
        )
        == 0
    )
    hits = await hybrid_search(services, SearchScope(user_id=user.id), "launch code word", 5)
    assert hits and all("MANGO" in h.record.text for h in hits)

    async with services.engine.begin() as conn:
        assert await documents.delete_document(conn, user.id, second.document_id)
    for table in ("child_chunks", "parent_chunks", "keyword_terms", "keyword_postings"):
        left = await _count(
            services, f"SELECT count(*) FROM {table} WHERE document_id = :d", d=second.document_id
        )
        assert left == 0, table
    assert await hybrid_search(services, SearchScope(user_id=user.id), "launch code word", 5) == []


async def test_the_same_bytes_parsed_anew_replace_the_old_parse_and_keep_what_refers_to_it(
    services, new_user, monkeypatch
):
    """A file stored by an older reader (here: one that joined "dual-encoder" into
    "dualencoder") is re-read when its bytes come again: the new parse replaces the stored
    one, and its shares, chats and corrections follow it. The same parse again is a
    duplicate."""
    import agent.ingest.pipeline as pipeline
    from agent.db import chats, corrections, sharing

    owner, reader = await new_user("reparse"), await new_user("reparse-reader")
    data = b"The retriever uses a dual-encoder. Each passage is embedded once.\n"
    real_parse = pipeline.parse_bytes

    def older_reader(*args, **kwargs):
        parsed = real_parse(*args, **kwargs)
        joined = [
            replace(p, text=p.text.replace("dual-encoder", "dualencoder"))
            for p in parsed.paragraphs
        ]
        return replace(parsed, paragraphs=joined)

    monkeypatch.setattr(pipeline, "parse_bytes", older_reader)
    old = await ingest_bytes(services, owner.id, data, "dpr.txt")
    monkeypatch.undo()
    chat_id = uuid.uuid4()
    async with services.engine.begin() as conn:
        await sharing.grant(conn, old.document_id, reader.id)
        await chats.ensure_chat(conn, owner.id, chat_id)
        await conn.execute(
            text("UPDATE chats SET document_id = :d WHERE id = :c"),
            {"d": old.document_id, "c": chat_id},
        )
        await corrections.add_correction(
            conn, owner.id, "It is a bi-encoder.", document_id=old.document_id
        )

    new = await ingest_bytes(services, owner.id, data, "dpr.txt")
    assert new.status == "replaced" and new.document_id != old.document_id
    for table in ("documents", "child_chunks"):
        column = "id" if table == "documents" else "document_id"
        assert not await _count(
            services, f"SELECT count(*) FROM {table} WHERE {column} = :d", d=old.document_id
        ), table
    stored = await _count(
        services,
        "SELECT count(*) FROM child_chunks WHERE document_id = :d AND text LIKE '%dual-encoder%'",
        d=new.document_id,
    )
    assert stored == new.chunks > 0
    # the share, the chat about it and the owner's correction now refer to the new parse
    for table, who in (("document_access", reader), ("chats", owner), ("corrections", owner)):
        moved = await _count(
            services,
            f"SELECT count(*) FROM {table} WHERE document_id = :d AND user_id = :u",
            d=new.document_id,
            u=who.id,
        )
        assert moved == 1, table
    hits = await hybrid_search(services, SearchScope(user_id=reader.id), "dual-encoder", 5)
    assert [h.record.document_id for h in hits] == [new.document_id]

    again = await ingest_bytes(services, owner.id, data, "dpr.txt")
    assert (again.status, again.document_id) == ("duplicate", new.document_id)


async def test_a_document_stored_before_parse_hashes_is_read_again_only_when_its_length_changed(
    services, new_user
):
    """Rows from before the parsed text's hash was kept are compared by length, so an
    unchanged file is not embedded again on every upload."""
    user = await new_user("legacy")
    data = b"The lighthouse keeper logs the weather at dawn and at dusk.\n"
    stored = await ingest_bytes(services, user.id, data, "log.txt")

    async def as_before(char_count: int) -> None:
        async with services.engine.begin() as conn:
            await conn.execute(
                text(
                    "UPDATE documents SET metadata = metadata - 'text_hash', "
                    "char_count = :n WHERE id = :d"
                ),
                {"d": stored.document_id, "n": char_count},
            )

    await as_before(len(data.decode().strip()))
    same = await ingest_bytes(services, user.id, data, "log.txt")
    assert (same.status, same.document_id) == ("duplicate", stored.document_id)
    await as_before(len(data) + 7)  # an older reader made other text of the same bytes
    fresh = await ingest_bytes(services, user.id, data, "log.txt")
    assert fresh.status == "replaced" and fresh.document_id != stored.document_id


async def test_retrieval_is_isolated_between_users(services, alice_reader, new_user):
    alice, _ = alice_reader
    bob = await new_user("bob")
    own = await hybrid_search(services, SearchScope(user_id=alice.id), "Dinah the cat", 5)
    assert own and any("Dinah" in h.record.text for h in own)
    assert all(h.record.owner_id == alice.id for h in own)
    assert await hybrid_search(services, SearchScope(user_id=bob.id), "Dinah the cat", 5) == []
    # a document id from another user is no way in either
    doc_ids = (own[0].record.document_id,)
    assert (
        await hybrid_search(services, SearchScope(user_id=bob.id, document_ids=doc_ids), "Dinah", 5)
        == []
    )


async def test_sharing_makes_a_document_visible_until_revoked(services, alice_reader, new_user):
    alice, result = alice_reader
    carol = await new_user("carol")
    async with services.engine.begin() as conn:
        await conn.execute(
            text("INSERT INTO document_access (document_id, user_id) VALUES (:d, :u)"),
            {"d": result.document_id, "u": carol.id},
        )
    assert await hybrid_search(services, SearchScope(user_id=carol.id), "Dinah the cat", 3)
    async with services.engine.begin() as conn:
        await conn.execute(
            text("UPDATE document_access SET is_visible = false WHERE user_id = :u"),
            {"u": carol.id},
        )
    assert await hybrid_search(services, SearchScope(user_id=carol.id), "Dinah the cat", 3) == []


async def test_hybrid_results_carry_stable_citation_ids_and_both_scores(services, alice_reader):
    alice, _ = alice_reader
    scope = SearchScope(user_id=alice.id)
    first = await hybrid_search(services, scope, "the Mock Turtle's story", 5)
    second = await hybrid_search(services, scope, "the Mock Turtle's story", 5)
    assert [h.citation_id for h in first] == [h.citation_id for h in second]
    for h in first:
        assert h.citation_id == citation_id(h.record.id)
    assert any(h.similarity is not None and h.keyword_score is not None for h in first)
    # MMR keeps the most relevant first, then trades relevance for diversity
    assert first[0].score == max(h.score for h in first)
    assert len({h.record.parent_id for h in first}) == len(first)  # one child per parent
    assert any("Mock Turtle" in h.record.text for h in first)


async def test_keyword_side_finds_rare_exact_terms(services, alice_reader):
    from agent.db.keyword_sql import keyword_search

    alice, _ = alice_reader
    async with services.engine.connect() as conn:
        hits = await keyword_search(conn, SearchScope(user_id=alice.id), "Quadrille lobster", 5)
        found = await conn.execute(
            text("SELECT text FROM child_chunks WHERE id = :i"), {"i": hits[0].chunk_id}
        )
        assert "Lobster" in found.scalar()
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


async def test_library_bm25_reads_top_postings_yet_scores_exactly(services, alice_reader, new_user):
    """The library-wide BM25 (impact-ordered postings) agrees with exhaustive scoring, keeps
    exact scores when it truncates posting lists, and reads documents shared with the user
    through the same path until the share is revoked."""
    from agent.db.keyword_sql import BM25Params, keyword_search

    alice, result = alice_reader
    question = "the Mock Turtle sang about soup to the Gryphon"
    async with services.engine.connect() as conn:
        owned = await conn.execute(
            text("SELECT id FROM documents WHERE user_id = :u"), {"u": alice.id}
        )
        # the same documents, named (scored over every posting) and as the whole library
        everything = SearchScope(alice.id, tuple(r.id for r in owned))
        library = SearchScope(user_id=alice.id)
        exhaustive = await keyword_search(conn, everything, question, 400)
        exact = {h.chunk_id: h.score for h in exhaustive}
        hits = await keyword_search(conn, library, question, 20)
        assert [h.score for h in hits] == pytest.approx([h.score for h in exhaustive[:20]])
        # same chunks, except where equal scores (repeated text) sit at the cut
        cut = exhaustive[19].score + 1e-6
        assert {h.chunk_id for h in hits if h.score > cut} == {
            h.chunk_id for h in exhaustive[:20] if h.score > cut
        }
        # a tiny read budget: fewer candidates, but every score is the exact one
        tight = await keyword_search(
            conn, library, question, 10, BM25Params(full_list=0, top_postings=3, rescore=5)
        )
        assert 0 < len(tight) <= 10
        assert all(h.score == pytest.approx(exact[h.chunk_id]) for h in tight)
        assert [h.score for h in tight] == sorted((h.score for h in tight), reverse=True)

    carol = await new_user("carol-bm25")
    async with services.engine.begin() as conn:
        await conn.execute(
            text("INSERT INTO document_access (document_id, user_id) VALUES (:d, :u)"),
            {"d": result.document_id, "u": carol.id},
        )
    async with services.engine.connect() as conn:
        shared = await keyword_search(conn, SearchScope(user_id=carol.id), question, 20)
    assert [h.chunk_id for h in shared] == [h.chunk_id for h in hits]
    async with services.engine.begin() as conn:
        await conn.execute(
            text("UPDATE document_access SET is_visible = false WHERE user_id = :u"),
            {"u": carol.id},
        )
    async with services.engine.connect() as conn:
        assert await keyword_search(conn, SearchScope(user_id=carol.id), question, 20) == []


async def test_embedding_store_refuses_another_dimension(services):
    with pytest.raises(EmbeddingMismatchError, match="384 dimensions"):
        await ensure_embedding_store(
            services.engine, "openai:text-embedding-3-small", 1536, services.settings
        )
    # the configured model itself is accepted again
    await ensure_embedding_store(
        services.engine, services.embeddings.name, services.embeddings.dimension, services.settings
    )


async def test_a_library_keeps_the_minilm_file_its_vectors_came_from(services):
    """``QUIRE_LOCAL_EMBEDDING`` picks the MiniLM file of a new store only: once vectors are
    stored, the file that made them embeds every later question and passage (the packaged
    file or the requantised one), whatever the setting says, so they share a vector space."""
    import numpy as np
    import psycopg
    from psycopg import sql

    from agent.db.server import server_url, with_database
    from agent.local_models import (
        EMBEDDING_LABEL,
        PACKAGED_EMBEDDING_LABEL,
        LocalMiniLMEmbeddings,
        packaged_embedding_model_file,
    )
    from agent.services import open_services

    if services.settings.database_url:
        pytest.skip("needs the embedded server to make a second database")
    name = f"{services.settings.database_name}_minilm"
    base = services.settings.model_copy(update={"database_name": name})
    fast = base.model_copy(update={"local_embedding": "int8-dynamic"})
    packaged = base.model_copy(update={"local_embedding": "packaged"})

    async def embedder_of(settings):
        svc = await open_services(settings)
        try:
            return svc.embeddings
        finally:
            await svc.close()

    try:
        assert (await embedder_of(fast)).name == EMBEDDING_LABEL  # a new store: the setting
        assert (await embedder_of(packaged)).name == EMBEDDING_LABEL  # then its vectors
        svc = await open_services(fast)
        try:
            async with svc.engine.begin() as conn:  # as a store of packaged-file vectors
                await conn.execute(
                    text("UPDATE embedding_store SET model = :m"), {"m": PACKAGED_EMBEDDING_LABEL}
                )
        finally:
            await svc.close()
        kept = await embedder_of(fast)
        assert kept.name == PACKAGED_EMBEDDING_LABEL
        question = "Who rented Netherfield Park?"
        assert np.allclose(
            kept.embedder.embed_query(question),
            LocalMiniLMEmbeddings(
                packaged_embedding_model_file(), PACKAGED_EMBEDDING_LABEL
            ).embed_query(question),
            atol=1e-6,
        )
    finally:
        admin = with_database(server_url(services.settings), "postgres").libpq
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


async def test_postings_written_batch_by_batch_are_every_chunk_term(
    services, new_user, tmp_path, monkeypatch
):
    """Ingestion writes each batch's BM25 postings beside the next batch's embedding: the
    document ends with one posting per distinct term of every chunk, as a recount from the
    stored tsvectors gives, and per-document term counts that agree with them."""
    user = await new_user("batched-postings")
    path = tmp_path / "rivers.txt"
    path.write_text(
        "\n\n".join(
            f"The river number {i} floods the valley of Ardent{i % 7} every spring. "
            f"Fishermen count {i * 3} herons along its banks."
            for i in range(60)
        )
    )
    monkeypatch.setattr(services.settings, "embed_batch_size", 4)
    result = await ingest_file(services, user.id, path)
    assert result.chunks > 8  # several batches
    recount = (
        "SELECT c.id, u.lexeme, coalesce(array_length(u.positions, 1), 1) AS tf "
        "FROM child_chunks c, unnest(c.tsv) u WHERE c.document_id = :d"
    )
    async with services.engine.connect() as conn:
        stored = set(
            (
                await conn.execute(
                    text("SELECT chunk_id, term, tf FROM keyword_postings WHERE document_id = :d"),
                    {"d": result.document_id},
                )
            ).all()
        )
        expected = set((await conn.execute(text(recount), {"d": result.document_id})).all())
        terms = dict(
            (
                await conn.execute(
                    text("SELECT term, df FROM keyword_terms WHERE document_id = :d"),
                    {"d": result.document_id},
                )
            ).all()
        )
    assert stored and stored == expected
    chunks_per_term: dict[str, int] = {}
    for _, term, _ in stored:
        chunks_per_term[term] = chunks_per_term.get(term, 0) + 1
    assert terms == chunks_per_term


async def test_failed_ingest_leaves_nothing_behind(services, new_user, tmp_path, monkeypatch):
    user = await new_user("crash")
    path = tmp_path / "doc.txt"
    path.write_text("A perfectly fine sentence about zebras. " * 50)

    async def boom(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr("agent.db.documents.finish_document", boom)
    with pytest.raises(RuntimeError):
        await ingest_file(services, user.id, path)
    assert (
        await _count(services, "SELECT count(*) FROM documents WHERE user_id = :u", u=user.id) == 0
    )
    assert (
        await _count(
            services,
            "SELECT count(*) FROM child_chunks c JOIN documents d ON d.id = c.document_id WHERE d.user_id = :u",
            u=user.id,
        )
        == 0
    )
    _ = uuid


async def test_pii_never_reaches_the_database_or_the_embedder(
    services, new_user, tmp_path, monkeypatch
):
    from tests.support.samples import PII_HEAVY

    seen: list[str] = []
    embedder = services.embeddings.embedder
    original = embedder.embed_documents

    def spy(texts):
        seen.extend(texts)
        return original(texts)

    monkeypatch.setattr(embedder, "embed_documents", spy)
    user = await new_user("pii")
    path = tmp_path / "contacts-john.smith@example.com.txt"
    path.write_text(PII_HEAVY * 6)
    result = await ingest_file(services, user.id, path)
    assert seen and not any("@example.com" in t or "123-45-6789" in t for t in seen)
    async with services.engine.connect() as conn:
        doc = (
            await conn.execute(
                text("SELECT title, doc_type, sensitivity FROM documents WHERE id = :d"),
                {"d": result.document_id},
            )
        ).one()
        chunks = (
            await conn.execute(
                text("SELECT text, sensitivity, redacted FROM child_chunks WHERE document_id = :d"),
                {"d": result.document_id},
            )
        ).all()
    assert doc.doc_type == "SENSITIVE" and doc.sensitivity == "HIGH"
    assert "@" not in doc.title
    assert chunks and all("@example.com" not in c.text and "4111" not in c.text for c in chunks)
    assert all(c.redacted and c.sensitivity == "HIGH" for c in chunks if "[REDACTED_" in c.text)


async def test_an_embedder_failing_midway_leaves_nothing_stored(services, new_user, monkeypatch):
    """Children are written batch by batch as they are embedded, in one transaction: a
    failure after some batches were written rolls all of them back."""
    from agent.models import EmbedderUnavailable

    embedder = services.embeddings.embedder
    original = embedder.embed_documents
    calls = []

    def fails_on_the_third_batch(texts):
        calls.append(len(texts))
        if len(calls) == 3:
            raise RuntimeError("the embedder went away")
        return original(texts)

    monkeypatch.setattr(embedder, "embed_documents", fails_on_the_third_batch)
    monkeypatch.setattr(services.settings, "embed_batch_size", 4)
    user = await new_user("midway")
    body = " ".join(f"Sentence {i} about the lighthouse keeper and the tide." for i in range(400))
    with pytest.raises(EmbedderUnavailable):
        await ingest_bytes(services, user.id, body.encode(), "midway.txt")
    assert len(calls) >= 3
    async with services.engine.connect() as conn:
        for table in ("documents", "child_chunks c JOIN documents d ON d.id = c.document_id"):
            alias = "d" if "JOIN" in table else "documents"
            left = await conn.execute(
                text(f"SELECT count(*) FROM {table} WHERE {alias}.user_id = :u"), {"u": user.id}
            )
            assert left.scalar() == 0
        postings = await conn.execute(
            text("SELECT count(*) FROM keyword_postings WHERE user_id = :u"), {"u": user.id}
        )
        assert postings.scalar() == 0
    monkeypatch.undo()
    done = await ingest_bytes(services, user.id, body.encode(), "midway.txt")
    assert done.status == "ingested" and done.chunks > 12
