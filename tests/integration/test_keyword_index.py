"""The in-memory BM25 copy: exact scores, incremental loads, deletes, visibility and the
background load — unit tests on hand-made postings, then against the real Postgres."""

from __future__ import annotations

import dataclasses
import math
import threading
import uuid

import numpy as np
import pytest
from sqlalchemy import text

from agent.db.keyword_sql import BM25Params, keyword_search
from agent.db.postings import PostingsBatch, VisibleDocument, library_state, visible_documents
from agent.db.scope import SearchScope
from agent.ingest.pipeline import ingest_bytes
from agent.library.documents import delete_user_document
from agent.retrieval.keyword_index import ReaderIndex
from agent.retrieval.keyword_indexes import KeywordIndexes
from agent.retrieval.search import SearchOptions, keyword_rankings, search

# --- unit: hand-made postings ---------------------------------------------------------------


def _doc(doc_id: str, version: str = "v1", chunks: int = 2, tokens: int = 10):
    return VisibleDocument(doc_id, version, chunks, tokens)


def _batch(docs, chunk_doc, tokens, terms) -> PostingsBatch:
    ids = [uuid.UUID(int=i + 1 + 100 * len(docs[0].id)) for i in range(len(chunk_doc))]
    return PostingsBatch(
        tuple(docs),
        ids,
        np.array(chunk_doc, dtype=np.int32),
        np.array(tokens, dtype=np.float32),
        {
            t: (np.array(r, dtype=np.int32), np.array(f, dtype=np.float32))
            for t, (r, f) in terms.items()
        },
    )


def _bm25(tf, dl, df, n, avgdl, k1=1.2, b=0.75):
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    return idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))


def _two_documents() -> tuple[ReaderIndex, list[VisibleDocument], PostingsBatch]:
    docs = [_doc("a", chunks=2, tokens=10), _doc("b", chunks=1, tokens=8)]
    batch = _batch(
        docs,
        chunk_doc=[0, 0, 1],
        tokens=[4, 6, 8],
        terms={"lamp": ([0, 2], [2, 1]), "keeper": ([1], [1])},
    )
    index = ReaderIndex()
    index.add(batch)
    return index, docs, batch


def test_scores_are_okapi_bm25_computed_by_hand():
    index, docs, batch = _two_documents()
    view = index.make_view("all", docs)
    hits = index.score(view, ["lamp", "keeper", "lamp", "absent"], 10, BM25Params())
    n, avgdl = 3, 18 / 3
    expected = {
        batch.chunk_ids[0]: _bm25(2, 4, 2, n, avgdl),
        batch.chunk_ids[1]: _bm25(1, 6, 1, n, avgdl),  # the rarer term weighs more
        batch.chunk_ids[2]: _bm25(1, 8, 2, n, avgdl),
    }
    assert {h.chunk_id: h.score for h in hits} == pytest.approx(expected)
    assert [h.score for h in hits] == pytest.approx(sorted(expected.values(), reverse=True))
    assert index.score(view, ["lamp"], 1, BM25Params())[0].chunk_id == batch.chunk_ids[0]
    assert index.score(view, ["absent"], 5, BM25Params()) == []


@pytest.mark.parametrize("seed", range(5))
def test_top_k_selection_equals_ranking_every_row(seed):
    """Random postings with many tied scores: the selection over the best postings gives
    exactly the first k of a full ranking by (score desc, chunk id)."""
    rng = np.random.default_rng(seed)
    rows, docs = 400, [_doc("d", chunks=400, tokens=4000)]
    vocabulary = [f"t{i}" for i in range(12)]
    terms = {}
    for term in vocabulary:
        hit = np.sort(rng.choice(rows, int(rng.integers(1, 200)), replace=False))
        terms[term] = (hit.tolist(), rng.integers(1, 3, len(hit)).tolist())
    tokens = rng.integers(5, 8, rows).tolist()  # few lengths: many equal scores
    batch = _batch(docs, [0] * rows, tokens, terms)
    index = ReaderIndex()
    index.add(batch)
    view = index.make_view("all", docs)
    query = list(rng.choice(vocabulary, 4, replace=False))
    full = index.score(view, query, rows, BM25Params())
    for k in (1, 3, 10, 40):
        assert index.score(view, query, k, BM25Params()) == full[:k]
    ordered = sorted(full, key=lambda h: (-h.score, h.chunk_id))
    assert full == ordered and len({h.chunk_id for h in full}) == len(full)


@pytest.mark.parametrize("seed", range(4))
def test_maxscore_skips_common_terms_yet_ranks_exactly(seed):
    """Rare and very common terms, unsorted postings in two loads, a view hiding a document:
    the early-terminated scoring equals Okapi BM25 computed for every row."""
    rng = np.random.default_rng(seed)
    per_doc, n_docs = 500, 4
    docs = [_doc(f"d{i}", chunks=per_doc, tokens=0) for i in range(n_docs)]
    tokens = rng.integers(3, 40, per_doc * n_docs)
    shares = {"rare1": 0.004, "rare2": 0.01, "mid": 0.1, "common": 0.8, "everywhere": 0.97}
    postings = {t: rng.random(per_doc * n_docs) < p for t, p in shares.items()}
    tfs = {t: rng.integers(1, 5, per_doc * n_docs) for t in shares}
    index = ReaderIndex()
    for half in (slice(0, 2), slice(2, 4)):  # two loads: the postings come in two parts
        part = docs[half]
        lo, hi = half.start * per_doc, half.stop * per_doc
        for i, d in enumerate(part):
            docs[half.start + i] = _doc(
                d.id,
                chunks=per_doc,
                tokens=int(tokens[lo + i * per_doc : lo + (i + 1) * per_doc].sum()),
            )
        terms = {}
        for t in shares:
            hit = np.flatnonzero(postings[t][lo:hi])
            rng.shuffle(hit)  # postings arrive in no particular order
            terms[t] = (hit.tolist(), tfs[t][lo:hi][hit].tolist())
        batch = _batch(
            docs[half], [i // per_doc for i in range(hi - lo)], tokens[lo:hi].tolist(), terms
        )
        index.add(dataclasses.replace(batch, chunk_ids=[uuid.uuid4() for _ in range(hi - lo)]))
    visible = [d for i, d in enumerate(docs) if i != 1]
    view = index.make_view("some", visible)
    rows = np.array([i // per_doc != 1 for i in range(per_doc * n_docs)])
    n = float(rows.sum())
    avgdl = float(tokens[rows].sum()) / n
    query = ["everywhere", "rare1", "common", "mid", "rare2"]
    expected = np.zeros(per_doc * n_docs)
    for t in query:
        hit = postings[t] & rows
        df = int(hit.sum())
        expected[hit] += [
            _bm25(tf, dl, df, n, avgdl) for tf, dl in zip(tfs[t][hit], tokens[hit], strict=True)
        ]
    for k in (1, 5, 20):
        got = index.score(view, query, k, BM25Params())
        best = sorted(expected[expected > 0], reverse=True)[:k]
        assert [h.score for h in got] == pytest.approx(best)
        by_row = {index.chunk_ids[r]: expected[r] for r in np.flatnonzero(rows)}
        assert all(by_row[h.chunk_id] == pytest.approx(h.score) for h in got)


def test_a_view_scores_only_its_visible_documents_with_their_statistics():
    index, docs, batch = _two_documents()
    only_b = index.make_view("only-b", [docs[1]])
    hits = index.score(only_b, ["lamp"], 10, BM25Params())
    assert [h.chunk_id for h in hits] == [batch.chunk_ids[2]]
    assert hits[0].score == pytest.approx(_bm25(1, 8, 1, 1, 8))  # N, df, avgdl of b alone
    assert index.view("only-b") is only_b and index.view("both") is None


def test_a_new_version_replaces_the_old_rows_and_compaction_keeps_scores():
    index, docs, _ = _two_documents()
    a2 = _doc("a", version="v2", chunks=1, tokens=5)
    newer = _batch([a2], chunk_doc=[0], tokens=[5], terms={"keeper": ([0], [3])})
    before = index.rows
    index.add(newer)
    assert index.missing([a2, docs[1]]) == []
    assert index.missing([docs[0]]) == [docs[0]]  # v1 is no longer held
    # a's two old rows died; 2 of 4 rows dead triggers compaction
    assert index.rows == before + 1 - 2 and index.dead_rows == 0
    view = index.make_view("a2-b", [a2, docs[1]])
    assert view.visible is None  # nothing hidden, nothing dead
    keeper = index.score(view, ["keeper"], 10, BM25Params())
    assert [h.chunk_id for h in keeper] == [newer.chunk_ids[0]]
    lamp = index.score(view, ["lamp"], 10, BM25Params())
    assert len(lamp) == 1 and lamp[0].score == pytest.approx(_bm25(1, 8, 1, 2, 13 / 2))


def test_forgetting_documents_removes_their_rows():
    index, docs, batch = _two_documents()
    index.forget_missing([docs[1]])  # "a" was deleted
    assert "a" not in index.slots and index.missing([docs[0]]) == [docs[0]]
    view = index.make_view("b", [docs[1]])
    assert {h.chunk_id for h in index.score(view, ["lamp", "keeper"], 10, BM25Params())} == {
        batch.chunk_ids[2]
    }


# --- against Postgres ----------------------------------------------------------------------


async def _ingest(services, user, body: str):
    return await ingest_bytes(services, user.id, f"{body} {uuid.uuid4().hex}".encode(), "n.txt")


async def _rankings(services, indexes: KeywordIndexes, scope: SearchScope, query: str, k=20):
    async with services.engine.connect() as conn:
        state = await library_state(conn, scope, [query])
    found = await indexes.rankings(services.engine, scope, state, k, BM25Params())
    return None if found is None else found[0]


async def test_memory_scores_equal_exhaustive_sql_scores(services, alice_reader):
    alice, result = alice_reader
    indexes = KeywordIndexes(10_000_000, 10_000_000)
    scope = SearchScope(user_id=alice.id)
    named = SearchScope(alice.id, (result.document_id,))  # SQL scores named documents fully
    for question in ("the Mock Turtle sang about soup", "Who is Alice's cat Dinah?"):
        memory = await _rankings(services, indexes, scope, question, 40)
        async with services.engine.connect() as conn:
            exact = await keyword_search(conn, named, question, 40)
        assert memory and [h.score for h in memory] == pytest.approx([h.score for h in exact])
        cut = exact[-1].score + 1e-6  # equal scores at the cut may differ
        assert {h.chunk_id for h in memory if h.score > cut} == {
            h.chunk_id for h in exact if h.score > cut
        }


async def test_fingerprints_agree_and_views_are_reused(services, new_user):
    user = await new_user("kw-fp")
    await _ingest(services, user, "The lighthouse keeper polishes the lamp.")
    scope = SearchScope(user_id=user.id)
    async with services.engine.connect() as conn:
        state = await library_state(conn, scope, ["Keepers polish lamps!"])
        listed = await visible_documents(conn, scope)
    assert state.fingerprint == listed.fingerprint
    assert len(listed.documents) == 1
    assert set(state.query_terms[0]) == {"keeper", "polish", "lamp"}
    indexes = KeywordIndexes(10_000_000, 10_000_000)
    await _rankings(services, indexes, scope, "lamp")
    assert indexes.reader(user.id).view(state.fingerprint) is not None


async def test_questions_are_scored_off_the_event_loop(services, new_user, monkeypatch):
    """Scoring a large library takes milliseconds of CPU: a worker thread does it, so the
    event loop goes on (the dense read is sent, other requests are served) meanwhile, and
    the arrays are held still while it runs."""
    user = await new_user("kw-thread")
    await _ingest(services, user, "The lighthouse keeper polishes the lamp.")
    scope = SearchScope(user_id=user.id)
    indexes = KeywordIndexes(10_000_000, 10_000_000)
    seen = []
    original = ReaderIndex.score

    def recording(self, *args, **kwargs):
        seen.append(
            (threading.current_thread() is threading.main_thread(), self.arrays_lock.locked())
        )
        return original(self, *args, **kwargs)

    monkeypatch.setattr(ReaderIndex, "score", recording)
    assert await _rankings(services, indexes, scope, "lamp")
    assert seen == [(False, True)]


async def test_ingest_loads_one_document_and_delete_forgets_it(services, new_user):
    user = await new_user("kw-incr")
    first = await _ingest(services, user, "The lighthouse keeper polishes the lamp.")
    scope = SearchScope(user_id=user.id)
    indexes = KeywordIndexes(10_000_000, 10_000_000)
    assert await _rankings(services, indexes, scope, "lighthouse")
    index = indexes.reader(user.id)
    slot, held = index.slots[str(first.document_id)], index.postings

    second = await _ingest(services, user, "A second lighthouse stands on the cliff.")
    hits = await _rankings(services, indexes, scope, "lighthouse")
    assert {h.chunk_id for h in hits} == await _chunk_ids(services, user.id)
    assert index.slots[str(first.document_id)] == slot  # not loaded again
    assert index.postings > held

    await delete_user_document(services, user.id, second.document_id)
    hits = await _rankings(services, indexes, scope, "lighthouse cliff")
    assert {h.chunk_id for h in hits} == await _chunk_ids(services, user.id)
    assert str(second.document_id) not in index.slots


async def _chunk_ids(services, user_id) -> set[uuid.UUID]:
    async with services.engine.connect() as conn:
        rows = await conn.execute(
            text(
                "SELECT c.id FROM child_chunks c JOIN documents d ON d.id = c.document_id "
                "WHERE d.user_id = :u"
            ),
            {"u": user_id},
        )
        return {r.id for r in rows}


async def _sql_ids(services, scope: SearchScope, query: str) -> set:
    """The chunks Postgres's own BM25 (the fallback to the memory copy) finds."""
    async with services.engine.connect() as conn:
        return {h.chunk_id for h in await keyword_search(conn, scope, query, 20)}


async def test_visibility_comes_from_postgres_on_every_search(services, new_user):
    """Another user's chunks are never scored; a share shows up and a revoke hides it at
    once, although the shared document's postings are still held in memory. Postgres's
    BM25 admits exactly the same chunks."""
    owner, reader = await new_user("kw-owner"), await new_user("kw-reader")
    doc = await _ingest(services, owner, "The lighthouse keeper polishes the lamp.")
    mine = await _ingest(services, reader, "My own lighthouse notes.")
    indexes = KeywordIndexes(10_000_000, 10_000_000)
    scope = SearchScope(user_id=reader.id)
    own_only = await _chunk_ids(services, reader.id)
    assert {h.chunk_id for h in await _rankings(services, indexes, scope, "lighthouse")} == own_only
    assert await _sql_ids(services, scope, "lighthouse") == own_only
    async with services.engine.begin() as conn:
        await conn.execute(
            text("INSERT INTO document_access (document_id, user_id) VALUES (:d, :u)"),
            {"d": doc.document_id, "u": reader.id},
        )
    shared = {h.chunk_id for h in await _rankings(services, indexes, scope, "lighthouse")}
    assert shared == own_only | await _chunk_ids(services, owner.id)
    assert await _sql_ids(services, scope, "lighthouse") == shared
    narrowed = SearchScope(reader.id, (mine.document_id,))
    assert {
        h.chunk_id for h in await _rankings(services, indexes, narrowed, "lighthouse")
    } == own_only
    async with services.engine.begin() as conn:
        await conn.execute(
            text("UPDATE document_access SET is_visible = false WHERE user_id = :u"),
            {"u": reader.id},
        )
    assert {h.chunk_id for h in await _rankings(services, indexes, scope, "lighthouse")} == own_only
    assert await _sql_ids(services, scope, "lighthouse") == own_only


async def test_the_listed_visible_set_is_the_visible_set(services, new_user):
    """The index-friendly listing (own documents, then shares) admits exactly what the
    membership test does, under every filter, share and revoke."""
    owner, reader = await new_user("list-owner"), await new_user("list-reader")
    theirs = await _ingest(services, owner, "A shared page about tides.")
    hidden = await _ingest(services, owner, "An unshared page about tides.")
    mine = await _ingest(services, reader, "My page about tides.")
    async with services.engine.begin() as conn:
        await conn.execute(
            text("INSERT INTO document_access (document_id, user_id) VALUES (:d, :u)"),
            {"d": theirs.document_id, "u": reader.id},
        )

    async def both(scope: SearchScope) -> tuple[set, set]:
        visible, params = scope.visible_documents_sql()
        listed, _ = scope.listed_documents_sql("d.id")
        async with services.engine.connect() as conn:
            admitted = {r[0] for r in await conn.execute(text(visible), params)}
            returned = [r[0] for r in await conn.execute(text(listed), params)]
        assert len(returned) == len(set(returned))  # each document once
        return admitted, set(returned)

    everything = {mine.document_id, theirs.document_id, hidden.document_id}
    scopes = {
        "library": (SearchScope(reader.id), {mine.document_id, theirs.document_id}),
        "own only": (SearchScope(reader.id, include_shared=False), {mine.document_id}),
        "named": (
            SearchScope(reader.id, tuple(everything)),
            {mine.document_id, theirs.document_id},
        ),
        "corpus": (SearchScope(reader.id, corpus="elsewhere"), set()),
        "type": (SearchScope(reader.id, doc_types=("txt", "document")), None),
    }
    for name, (scope, expected) in scopes.items():
        admitted, listed = await both(scope)
        assert listed == admitted, name
        if expected is not None:
            assert listed == expected, name
    async with services.engine.begin() as conn:
        await conn.execute(
            text("UPDATE document_access SET is_visible = false WHERE user_id = :u"),
            {"u": reader.id},
        )
    admitted, listed = await both(SearchScope(reader.id))
    assert listed == admitted == {mine.document_id}


async def test_a_big_first_load_runs_in_the_background_while_sql_answers(
    services, new_user, monkeypatch
):
    user = await new_user("kw-bg")
    await _ingest(services, user, "The lighthouse keeper polishes the lamp.")
    scope = SearchScope(user_id=user.id)
    indexes = KeywordIndexes(10_000_000, sync_load_tokens=0)
    assert await _rankings(services, indexes, scope, "lighthouse") is None
    index = indexes.reader(user.id)
    assert index.background is not None
    await index.background
    assert await _rankings(services, indexes, scope, "lighthouse")

    monkeypatch.setattr(services, "keyword_indexes", KeywordIndexes(10_000_000, 0))
    result = await search(services, scope, "lighthouse keeper", SearchOptions(use_cache=False))
    assert result.chunks and not result.metrics.failures  # answered by SQL meanwhile
    await services.keyword_indexes.close()


async def test_a_failing_copy_falls_back_to_sql(services, new_user, monkeypatch):
    """Whatever breaks in the memory copy, a search still ranks by BM25 (in SQL)."""
    user = await new_user("kw-broken")
    await _ingest(services, user, "The lighthouse keeper polishes the lamp.")
    scope = SearchScope(user_id=user.id)

    def broken(*args, **kwargs):
        raise RuntimeError("scoring loops unavailable")

    monkeypatch.setattr(ReaderIndex, "score_all", broken)
    async with services.engine.connect() as conn:
        state = await library_state(conn, scope, ["lighthouse"])
    ranked = await keyword_rankings(services, scope, state, ["lighthouse"], 5)
    async with services.engine.connect() as conn:
        exact = await keyword_search(conn, scope, "lighthouse", 5)
    assert ranked[0] and [h.chunk_id for h in ranked[0]] == [h.chunk_id for h in exact]


async def test_least_recently_used_readers_are_dropped(services, new_user):
    users = [await new_user("kw-lru") for _ in range(3)]
    for user in users:
        await _ingest(services, user, "The lighthouse keeper polishes the lamp.")
    indexes = KeywordIndexes(max_postings=1, sync_load_tokens=10_000_000)
    for user in users:
        await _rankings(services, indexes, SearchScope(user_id=user.id), "lamp")
    assert list(indexes._readers) == [users[-1].id]


# --- the reads around it ---------------------------------------------------------------------


def test_sqlalchemy_parameters_become_psycopg_ones_with_casts_kept():
    from agent.db.driver import pyformat

    sql = "SELECT CAST(:q AS vector), x::text, '%' FROM t WHERE a = :a AND b = ANY(:ids)"
    assert pyformat(sql, binary={"q", "ids"}) == (
        "SELECT CAST(%(q)b AS vector), x::text, '%%' FROM t WHERE a = %(a)s AND b = ANY(%(ids)b)"
    )


async def test_candidate_reads_never_return_chunks_outside_the_scope(services, new_user):
    from agent.db.chunks import candidate_records, dense_candidates

    mine, theirs = await new_user("kw-cand"), await new_user("kw-cand")
    await _ingest(services, mine, "The lighthouse keeper polishes the lamp.")
    await _ingest(services, theirs, "The lighthouse keeper polishes the lamp.")
    foreign = await _chunk_ids(services, theirs.id)
    scope = SearchScope(user_id=mine.id)
    vector = services.embeddings.embedder.embed_query("lighthouse keeper")
    async with services.engine.connect() as conn:
        records, vectors = await candidate_records(conn, scope, list(foreign))
        assert records == {} and vectors == {}
        hits, records, vectors = await dense_candidates(conn, scope, vector, 10)
    assert {h.chunk_id for h in hits} == set(records) == set(vectors)
    assert set(records) == await _chunk_ids(services, mine.id)
    assert all(r.parent_text is None for r in records.values())  # parents come later


async def test_search_given_the_query_vector_is_the_same_search(services, alice_reader):
    from agent.retrieval.search import clear_search_cache

    alice, _ = alice_reader
    scope = SearchScope(user_id=alice.id)
    question = "Who is Alice's cat?"
    clear_search_cache()
    plain = await search(services, scope, question, SearchOptions(k=5, use_cache=False))
    vector = services.embeddings.embedder.embed_query(question)
    given = await search(
        services, scope, question, SearchOptions(k=5, use_cache=False), query_vector=vector
    )
    assert [c.record.id for c in given.chunks] == [c.record.id for c in plain.chunks]
    assert [c.similarity for c in given.chunks] == pytest.approx(
        [c.similarity for c in plain.chunks]
    )
    assert all(c.record.parent_text for c in given.chunks)  # parents read for the chosen
    assert given.metrics.stages_ms["embed"] == 0.0


async def _owner_counts(services, user_id) -> tuple[dict, dict]:
    """The owner's kept term counts, and the same counts summed from ``keyword_terms``."""
    async with services.engine.connect() as conn:
        kept = await conn.execute(
            text("SELECT term, df FROM keyword_owner_terms WHERE user_id = :u"), {"u": user_id}
        )
        summed = await conn.execute(
            text(
                "SELECT t.term, sum(t.df) AS df FROM keyword_terms t "
                "JOIN documents d ON d.id = t.document_id WHERE d.user_id = :u GROUP BY t.term"
            ),
            {"u": user_id},
        )
        return {r.term: r.df for r in kept}, {r.term: r.df for r in summed}


async def test_owner_term_counts_follow_ingest_and_delete_and_score_exactly(services, new_user):
    """SQL BM25 over a whole library reads the owner's term counts: they stay equal to the
    per-document sums through ingests and deletes, and score exactly as summing per
    document does (a share included)."""
    owner, other = await new_user("kw-owner-df"), await new_user("kw-owner-df-share")
    bodies = [
        "The lighthouse keeper polishes the lamp every evening.",
        "A second lighthouse stands on the cliff above the harbour.",
        "Fishing boats leave the harbour before the lamp is lit.",
    ]
    docs = [await _ingest(services, owner, body) for body in bodies]
    kept, summed = await _owner_counts(services, owner.id)
    assert kept == summed and kept["lighthous"] == 2 and kept["harbour"] == 2

    theirs = await _ingest(services, other, "Their harbour lighthouse has a brass lamp.")
    async with services.engine.begin() as conn:
        await conn.execute(
            text("INSERT INTO document_access (document_id, user_id) VALUES (:d, :u)"),
            {"d": theirs.document_id, "u": owner.id},
        )
    every = (*(d.document_id for d in docs), theirs.document_id)
    for question in ("lighthouse lamp", "harbour boats cliff"):
        async with services.engine.connect() as conn:
            library = await keyword_search(conn, SearchScope(owner.id), question, 20)
            named = await keyword_search(conn, SearchScope(owner.id, every), question, 20)
        assert {h.chunk_id: h.score for h in library} == pytest.approx(
            {h.chunk_id: h.score for h in named}
        )

    await delete_user_document(services, owner.id, docs[1].document_id)
    kept, summed = await _owner_counts(services, owner.id)
    assert kept == summed and kept["lighthous"] == 1 and "cliff" not in kept
    theirs_kept, theirs_summed = await _owner_counts(services, other.id)
    assert theirs_kept == theirs_summed and theirs_kept["brass"] == 1  # another owner's own


async def test_a_load_outlives_the_search_that_ran_out_of_time(services, new_user, monkeypatch):
    """A search that times out while loading new postings leaves the load to finish: the
    next search scores from memory instead of starting the load over."""
    import asyncio

    import agent.retrieval.keyword_indexes as keyword_indexes

    user = await new_user("kw-slow-load")
    await _ingest(services, user, "The lighthouse keeper polishes the lamp.")
    real_load = keyword_indexes.load_postings
    loads = []

    async def slow_load(conn, document_ids):
        loads.append(list(document_ids))
        await asyncio.sleep(0.5)
        return await real_load(conn, document_ids)

    monkeypatch.setattr(keyword_indexes, "load_postings", slow_load)
    indexes = KeywordIndexes(10_000_000, 10_000_000)
    scope = SearchScope(user_id=user.id)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(_rankings(services, indexes, scope, "lighthouse"), 0.1)
    await asyncio.sleep(1.0)
    assert indexes.reader(user.id).postings > 0  # loaded after all
    hits = await _rankings(services, indexes, scope, "lighthouse")
    assert {h.chunk_id for h in hits} == await _chunk_ids(services, user.id)
    assert len(loads) == 1
