"""The retrieval pipeline: filters, boosts, every fallback layer, expansion, rerank, cache,
timeout, context building and isolation — against the real Postgres + pgvector."""

from __future__ import annotations

import asyncio
import math
import re
import uuid
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from langchain_core.language_models import BaseChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from sqlalchemy import text

from agent.db.chunks import any_chunks
from agent.db.read_pool import APPLICATION_NAME
from agent.db.scope import SearchScope, window_start
from agent.ingest.pipeline import ingest_bytes
from agent.ingest.sources import IngestRequest, ingest_source
from agent.library.documents import delete_user_document
from agent.retrieval import candidates as candidates_module
from agent.retrieval import held_words as held_words_module
from agent.retrieval.boosts import prefer_authoritative, tag_boost, tag_overlap, time_decay
from agent.retrieval.context import build_context, truncate_words
from agent.retrieval.expansion import expand_query, parse_rewrites
from agent.retrieval.knowledge import snippet
from agent.retrieval.rerank import llm_scores, parse_scores
from agent.retrieval.search import SearchOptions, clear_search_cache, search
from tests.support.chunks import retrieved_chunk

LIGHTHOUSE = "The lighthouse keeper polishes the great lamp every evening before the storm."
BAKERY = "The village bakery sells rye bread and honey cakes on market days."
ORCHARD = "Apple trees in the orchard bloom in spring and are harvested in autumn."


@pytest.fixture(autouse=True)
def _fresh_cache():
    clear_search_cache()
    yield
    clear_search_cache()


async def _doc(services, user, body: str, name: str = "note.txt", **kwargs):
    return await ingest_bytes(
        services, user.id, f"{body} ({uuid.uuid4().hex[:6]})".encode(), name, **kwargs
    )


async def _sql(services, sql: str, **params):
    async with services.engine.begin() as conn:
        await conn.execute(text(sql), params)


async def _fixed_doc(services, user, body: str):
    return await ingest_bytes(services, user.id, body.encode(), "note.txt")


def _scores(result) -> dict[uuid.UUID, float]:
    return {c.record.document_id: c.score for c in result.chunks}


def _ids(result) -> list[uuid.UUID]:
    return [c.record.document_id for c in result.chunks]


# --- unit: boosts, windows, expansion, rerank, context ---------------------------------------


def test_time_decay_tag_boost_and_authority_ties():
    now = datetime(2026, 1, 10, tzinfo=UTC)
    assert time_decay(now, 7, 0.1, now) == 1.0
    assert math.isclose(time_decay(now - timedelta(days=7), 7, 0.1, now), math.exp(-1))
    assert time_decay(now - timedelta(days=70), 7, 0.25, now) == 0.25  # the floor
    assert tag_overlap("lighthouse lamp repairs", ["Lighthouse", "lamp"]) == pytest.approx(2 / 3)
    assert tag_boost("lighthouse", ["lighthouse"], 0.2) == pytest.approx(1.2)
    assert tag_boost("bread", ["lighthouse"], 0.2) == 1.0
    items = [("t1", 1.0, True), ("d1", 0.995, False), ("d2", 0.5, False), ("t2", 0.49, True)]
    ordered = prefer_authoritative(items, lambda x: x[1], lambda x: x[2], ratio=0.02)
    assert [x[0] for x in ordered] == ["d1", "t1", "d2", "t2"]


def test_time_windows():
    now = datetime(2026, 1, 10, 12, tzinfo=UTC)
    assert window_start("24h", now) == now - timedelta(hours=24)
    assert window_start("48h", now) == now - timedelta(hours=48)
    assert window_start("1w", now) == now - timedelta(weeks=1)
    assert window_start("all", now) is None and window_start(None) is None
    with pytest.raises(ValueError, match="time window"):
        window_start("2d")  # type: ignore[arg-type]


async def test_expansion_classifies_then_rewrites_within_four_queries():
    model = GenericFakeChatModel(
        messages=iter(
            [
                AIMessage("Procedural."),
                AIMessage(
                    "1. steps to polish a lamp\n- How to polish the lamp?\nlamp care\nextra one"
                ),
            ]
        )
    )
    expansion = await expand_query(model, "How to polish the lamp?", max_queries=4)
    assert expansion.intent == "procedural"
    assert expansion.queries == [
        "How to polish the lamp?",
        "steps to polish a lamp",
        "lamp care",
        "extra one",
    ]
    assert parse_rewrites('"a b c"\n\nA B C\nx', "orig", 3) == ["a b c"]


async def test_rerank_scores_are_parsed_and_bounded():
    assert parse_scores("1: 3\n[2] = 9.5\n3 - 42\nnoise", 4) == [3.0, 9.5, 10.0, 0.0]
    model = GenericFakeChatModel(messages=iter([AIMessage("1: 2\n2: 8")]))
    assert await llm_scores(model, "q", ["a", "b"]) == [2.0, 8.0]


def _chunk(text_: str, parent: uuid.UUID | None = None, parent_text: str | None = None, n=0):
    return retrieved_chunk(
        text_,
        cite_as=f"#chk_{n:08x}",
        similarity=0.9,
        parent_id=parent,
        chunk_index=n,
        chapter_title="Chapter 1",
        page=n + 1,
        parent_text=parent_text,
    )


def test_context_uses_each_parent_once_and_drops_repeated_sentences():
    parent = uuid.uuid4()
    first = "The keeper climbed the tower. He lit the lamp at dusk."
    second = "Ships passed the rocks safely. The keeper slept at dawn."
    parent_text = f"{first} {second} " + "Gulls circled the cliffs all day. " * 80
    a = _chunk(first, parent, parent_text, 0)
    b = _chunk(second, parent, parent_text, 1)
    c = _chunk("The keeper climbed the tower! He lit the lamp at dusk.", None, None, 2)
    built = build_context([a, b, c], max_chars=5000, parent_chars=400, overlap=0.8)
    assert built.text.count("Gulls circled") <= 12  # one window of the parent, not two
    assert built.bodies[a.citation_id].startswith("The keeper climbed")
    assert len(built.bodies[a.citation_id]) <= 400 + len(first) + 2
    # b's sentences are inside a's parent window: b adds nothing new and is left out
    assert b.citation_id not in built.bodies
    assert c.citation_id not in built.bodies and built.dropped_sentences >= 2
    assert built.sources == ["Book, Chapter 1 (p. 1)"]
    assert set(built.chunk_map) == set(built.bodies)
    tight = build_context([a, c], max_chars=120, parent_chars=400)
    assert len(tight.text) <= 120 + 60 and tight.chunks == [a]
    compressed = build_context([a], 5000, 400, paragraphs={a.citation_id: "[Partial]: He lit it."})
    assert "[Partial]: He lit it." in compressed.text
    assert truncate_words("alpha beta gamma delta", 12) == "alpha beta…"


def test_snippets_are_query_aware_and_bounded():
    body = " ".join(f"Sentence {i} is about nothing much at all." for i in range(30))
    body += " The lighthouse keeper polishes the lamp. " + body
    found = snippet(body, "who polishes the lighthouse lamp?", 120)
    assert "lighthouse keeper polishes" in found and len(found) <= 120


# --- integration: filters, layers, cache, timeout, isolation --------------------------------


async def test_filters_corpus_document_type_and_time_window(services, new_user):
    user = await new_user("filters")
    light = await _doc(services, user, LIGHTHOUSE, corpus="coast")
    bake = await _doc(services, user, BAKERY, corpus="village")
    await _sql(
        services,
        "UPDATE documents SET created_at = now() - interval '3 days' WHERE id = :d",
        d=bake.document_id,
    )
    scope = SearchScope(user_id=user.id)
    assert set(_ids(await search(services, scope, "lamp bread", SearchOptions(k=5)))) == {
        light.document_id,
        bake.document_id,
    }
    only = await search(services, SearchScope(user_id=user.id, corpus="village"), "lamp bread")
    assert set(_ids(only)) == {bake.document_id}
    by_doc = SearchScope(user_id=user.id, document_ids=(light.document_id,))
    assert set(_ids(await search(services, by_doc, "bread"))) <= {light.document_id}
    recent = SearchScope(user_id=user.id, created_after=window_start("24h"))
    assert set(_ids(await search(services, recent, "lamp bread"))) == {light.document_id}
    week = SearchScope(user_id=user.id, created_after=window_start("1w"))
    assert len(set(_ids(await search(services, week, "lamp bread")))) == 2
    typed = SearchScope(user_id=user.id, doc_types=("FAQ",))
    assert (await search(services, typed, "lamp")).chunks == []


async def test_time_decay_and_transcript_tags_reorder(services, new_user, monkeypatch):
    user = await new_user("boost")
    # fixed texts: a random suffix moved the dense scores enough to flip near-ties
    old = await _fixed_doc(services, user, LIGHTHOUSE)
    new = await _fixed_doc(services, user, LIGHTHOUSE.replace("every evening", "each evening"))
    await _sql(
        services,
        "UPDATE documents SET created_at = now() - interval '30 days' WHERE id = :d",
        d=old.document_id,
    )
    scope = SearchScope(user_id=user.id)
    query, options = "lighthouse keeper lamp", SearchOptions(k=2, use_cache=False)
    undecayed = _scores(await search(services, scope, query, options))
    monkeypatch.setattr(services.settings, "time_decay_half_life_days", 2.0)
    decayed_result = await search(services, scope, query, options)
    decayed = _scores(decayed_result)
    assert decayed[old.document_id] == pytest.approx(undecayed[old.document_id] * 0.5)  # floor
    assert decayed[new.document_id] == pytest.approx(undecayed[new.document_id], rel=1e-3)
    assert undecayed[old.document_id] < 2 * undecayed[new.document_id]  # near texts
    assert _ids(decayed_result)[0] == new.document_id

    monkeypatch.setattr(services.settings, "time_decay_half_life_days", None)
    tagged = await new_user("boost")
    # the same words in a document and a transcript: an exact tie on the plain query
    voice = await ingest_source(
        services, tagged.id, IngestRequest(raw_text=ORCHARD, tags=["pear", "orchard", "harvest"])
    )
    doc = await _fixed_doc(services, tagged, ORCHARD + "\n")
    tagged_scope = SearchScope(user_id=tagged.id)
    plain = await search(services, tagged_scope, "trees bloom", options)
    plain_scores = _scores(plain)
    assert plain_scores[doc.document_id] == pytest.approx(plain_scores[voice.document_id])
    assert _ids(plain)[0] == doc.document_id  # on a tie the document comes first
    boosted = await search(services, tagged_scope, "pear orchard harvest", options)
    assert _ids(boosted)[0] == voice.document_id


async def test_a_keyword_hit_joins_chunks_only_loosely_similar(services, new_user, monkeypatch):
    """Nothing clears the threshold and the embedder prefers a passage without the answer:
    the one holding the question's words is read too, first by the fused ranking."""
    user = await new_user("held-low")
    # fixed texts (no random suffix): MiniLM puts them ~0.1 apart, the wrong way round
    held = await _fixed_doc(
        services,
        user,
        "Ledgers, tide tables and eleven months in the harbour office: Ysolde Marrant"
        " curated the exhibition.",
    )
    near = await _fixed_doc(
        services,
        user,
        "Which person put together the museum's new gallery show of objects? The team who"
        " selects displays.",
    )
    scope, q = SearchScope(user_id=user.id), "who curated the exhibition"
    every = await search(services, scope, q, SearchOptions(threshold=0.0, use_cache=False))
    similar = {c.record.document_id: c.similarity for c in every.chunks}
    assert similar[near.document_id] > similar[held.document_id]
    between = (similar[near.document_id] + similar[held.document_id]) / 2
    monkeypatch.setattr(services.settings, "threshold_fallback", between)
    result = await search(services, scope, q, SearchOptions(threshold=0.99, use_cache=False))
    assert result.layer == "low_threshold"
    assert _ids(result) == [held.document_id, near.document_id]


OFFICE = (
    "Parking spaces are allocated by lottery each quarter, so new starters use the bus at"
    " first. Bike storage is in the courtyard and its door code changes on the first of every"
    " month. Lunch is served in the canteen on the second floor from noon until two. The fire"
    " assembly point is the car park of the maritime museum across the road. Visitors must"
    " sign in at reception and wear a badge."
)


async def test_a_sentence_near_the_question_makes_a_far_chunk_evidence(
    services, new_user, monkeypatch
):
    """No chunk is similar enough and none holds the question's words, yet one sentence of
    the best is near the question: its chunk is evidence (the ``sentence`` layer); a
    question no sentence is near stays below relevance."""
    user = await new_user("sentence-near")
    doc = await _fixed_doc(services, user, OFFICE)
    scope = SearchScope(user_id=user.id)
    monkeypatch.setattr(services.settings, "threshold_fallback", 0.995)
    monkeypatch.setattr(held_words_module, "WORDS_HELD_SHARE", 1.01)
    options = SearchOptions(threshold=0.99, use_cache=False)
    near = await search(services, scope, "Where is our fire assembly point?", options)
    assert near.layer == "sentence" and _ids(near) == [doc.document_id]
    needed = services.settings.threshold_sentence
    assert near.metrics.sentence_similarity >= needed > near.chunks[0].similarity
    far = await search(services, scope, "Who painted the Mona Lisa?", options)
    assert far.layer == "any_embedded" and far.metrics.sentence_similarity < needed


NOTEBOOK = (
    "Field notebook, volume three. Instruments: multiprobe number two (serial MP2-0448) and"
    " the turbidity meter TM-07; multiprobe number one is away for repair. Sites are sampled"
    " every second Tuesday from the footbridge, and the season runs from May to September."
)


async def test_a_question_in_the_documents_own_words_is_about_them(services, new_user, monkeypatch):
    """No chunk is near the question and no sentence either, yet the documents hold most of
    its words and every name it uses: it is about them (the ``question_words`` layer, the
    fused ranking), not one for general knowledge. A question naming what the documents
    never do, or made of words they lack, stays below relevance."""
    user = await new_user("own-words")
    doc = await _fixed_doc(services, user, NOTEBOOK)
    await _fixed_doc(services, user, OFFICE)
    scope = SearchScope(user_id=user.id)
    monkeypatch.setattr(services.settings, "threshold_fallback", 0.995)
    monkeypatch.setattr(services.settings, "threshold_sentence", 0.995)
    monkeypatch.setattr(held_words_module, "WORDS_HELD_SHARE", 1.01)
    options = SearchOptions(threshold=0.99, use_cache=False)
    own = await search(services, scope, "Which serial number has the multiprobe we kept?", options)
    assert own.layer == "question_words" and _ids(own)[0] == doc.document_id
    assert all(c.layer == "question_words" for c in own.chunks)
    for general in (
        "Who painted the Mona Lisa?",  # a name no document uses
        "Which multiprobe did NASA fly?",  # an acronym no document uses
        "What is the boiling point of liquid mercury?",  # words the documents lack
    ):
        assert (await search(services, scope, general, options)).layer == "any_embedded", general
    monkeypatch.setattr(held_words_module, "KNOWN_WORDS_SHARE", 1.01)
    assert (
        await search(services, scope, "Which serial number has the multiprobe we kept?", options)
    ).layer == "any_embedded"


async def test_the_keyword_side_searches_for_the_measure_a_question_asks_about(services, new_user):
    """ "How tall" finds the row under "Typical height", which shares only the plant's name
    with the question, over a description that repeats the name."""
    user = await new_user("measures")
    table = await _fixed_doc(
        services, user, "Plant: Thimble; Flowers: June; Typical height: 40-60 cm."
    )
    await ingest_bytes(
        services,
        user.id,
        b"The thimble grows on screes. A thimble's bells are white. Thimble seed ripens late.",
        "guide.txt",
    )
    scope = SearchScope(user_id=user.id)
    found = await search(
        services, scope, "How tall does the thimble get?", SearchOptions(mode="bm25", k=2)
    )
    assert _ids(found)[0] == table.document_id


async def test_an_acronym_that_is_a_stop_word_keeps_its_keyword(services, new_user):
    """ "DO" (dissolved oxygen) and "IT" written in capitals are keywords; "do" and "it" in
    lower case stay stop words, in the chunks and in the question."""
    user = await new_user("acronyms")
    readings = await _fixed_doc(services, user, "Site S4 at noon: DO (mg/L) 5.9, pH 7.6.")
    await ingest_bytes(
        services, user.id, b"Site S4: we do the readings at noon; it rained.", "diary.txt"
    )
    await ingest_bytes(services, user.id, b"The IT desk opens at nine.", "desk.txt")
    scope = SearchScope(user_id=user.id)
    bm25 = SearchOptions(mode="bm25", k=3, use_cache=False)
    found = await search(services, scope, "What was the DO at S4?", bm25)
    assert _ids(found)[0] == readings.document_id
    assert found.chunks[0].keyword_score > found.chunks[1].keyword_score
    assert len(_ids(await search(services, scope, "Who runs IT?", bm25))) == 1
    assert _ids(await search(services, scope, "what do they do?", bm25)) == []
    async with services.engine.connect() as conn:
        lexemes = (
            await conn.execute(
                text("SELECT tsv::text FROM child_chunks WHERE document_id = :d"),
                {"d": readings.document_id},
            )
        ).scalar_one()
    assert "'doacronym'" in lexemes


async def test_every_fallback_layer(services, new_user, monkeypatch):
    user = await new_user("layers")
    doc = await _doc(services, user, LIGHTHOUSE)
    scope = SearchScope(user_id=user.id)
    q = "who polishes the lighthouse lamp"

    async def layer(threshold, **opts):
        result = await search(
            services, scope, q, SearchOptions(threshold=threshold, use_cache=False, **opts)
        )
        assert all(c.layer == result.layer == result.metrics.layer for c in result.chunks)
        return result

    assert (await layer(0.0)).layer == "hybrid"
    assert (await layer(0.0, mode="dense")).layer == "vector"
    assert (await layer(0.99)).layer == "low_threshold"  # nothing >= 0.99, something >= 0.3
    monkeypatch.setattr(services.settings, "threshold_fallback", 0.995)
    # nothing similar enough: the chunk still holds every word of the question...
    held = await layer(0.99)
    assert held.layer == "keyword" and _ids(held) == [doc.document_id]
    # ...but not the rarest words of this one: only the nearest chunks, below relevance
    unheld = await search(
        services,
        scope,
        "who repairs the foghorn of the lighthouse",
        SearchOptions(threshold=0.99, use_cache=False),
    )
    assert unheld.layer == "any_embedded" and _ids(unheld) == [doc.document_id]
    assert (await layer(0.99, mode="dense")).layer == "any_embedded"  # words need the keyword side

    async def broken(*args, **kwargs):
        raise RuntimeError("keyword index unavailable")

    with monkeypatch.context() as m:
        m.setattr(candidates_module, "keyword_rankings", broken)
        vector = await layer(0.0)
        assert vector.layer == "vector" and vector.chunks
        assert vector.metrics.failures == ["keyword: RuntimeError"]

    await _sql(
        services,
        "UPDATE child_chunks SET embedding = NULL WHERE document_id = :d",
        d=doc.document_id,
    )
    last = await layer(0.5)
    assert last.layer == "any_chunk" and _ids(last) == [doc.document_id]
    nobody = await new_user("layers")
    none = await search(services, SearchScope(user_id=nobody.id), q, SearchOptions(threshold=0.5))
    assert none.layer == "none" and none.chunks == []


async def test_cache_hits_until_the_library_changes(services, new_user):
    user = await new_user("cache")
    first_doc = await _doc(services, user, BAKERY)
    scope = SearchScope(user_id=user.id)
    first = await search(services, scope, "rye bread")
    again = await search(services, scope, "  rye   bread ")
    assert not first.metrics.cache_hit and again.metrics.cache_hit
    assert _ids(again) == _ids(first)
    other = await _doc(services, user, "Rye bread needs a sourdough starter.")
    fresh = await search(services, scope, "rye bread")
    assert not fresh.metrics.cache_hit and other.document_id in _ids(fresh)
    await delete_user_document(services, user.id, first_doc.document_id)
    after = await search(services, scope, "rye bread")
    assert not after.metrics.cache_hit and first_doc.document_id not in _ids(after)


async def test_any_chunks_lists_the_newest_documents_in_reading_order(services, new_user):
    user = await new_user("any-chunks")
    long = " ".join(f"Paragraph {i}. " + BAKERY * 12 + "\n\n" for i in range(12))
    for body in (long, ORCHARD, long):
        await _doc(services, user, body)
    scope = SearchScope(user_id=user.id)
    async with services.engine.connect() as conn:
        rows = await conn.execute(
            text(
                "SELECT c.id FROM child_chunks c JOIN documents d ON d.id = c.document_id "
                "WHERE d.user_id = :u ORDER BY d.created_at DESC, d.id, c.chunk_index"
            ),
            {"u": user.id},
        )
        expected = [r.id for r in rows]
        assert len(expected) > 10  # the long documents span several chunks
        for k in (1, 5, len(expected) + 3):
            assert await any_chunks(conn, scope, k) == expected[:k]


async def test_a_slow_retriever_times_out_and_the_other_answers(services, new_user, monkeypatch):
    user = await new_user("slow")
    await _doc(services, user, ORCHARD)
    real = candidates_module.dense_candidates

    async def slow(*args, **kwargs):
        await asyncio.sleep(5)
        return await real(*args, **kwargs)

    monkeypatch.setattr(candidates_module, "dense_candidates", slow)
    monkeypatch.setattr(services.settings, "retrieval_timeout_seconds", 0.5)
    started = asyncio.get_running_loop().time()
    result = await search(services, SearchScope(user_id=user.id), "apple orchard")
    assert asyncio.get_running_loop().time() - started < 3
    assert result.metrics.timed_out and result.chunks  # BM25 was ready


async def test_given_the_vector_dense_reads_while_the_library_state_is_read(
    services, new_user, monkeypatch
):
    user = await new_user("lanes")
    await _doc(services, user, ORCHARD)
    scope = SearchScope(user_id=user.id)
    vector = services.embeddings.embedder.embed_query("apple orchard")
    loop = asyncio.get_running_loop()
    seen: dict[str, float] = {}
    real_state, real_dense = candidates_module.library_state, candidates_module.dense_candidates

    async def slow_state(*args, **kwargs):
        await asyncio.sleep(0.3)
        state = await real_state(*args, **kwargs)
        seen["state done"] = loop.time()
        return state

    async def dense(*args, **kwargs):
        seen.setdefault("dense sent", loop.time())
        seen["dense reads"] = seen.get("dense reads", 0) + 1
        return await real_dense(*args, **kwargs)

    monkeypatch.setattr(candidates_module, "library_state", slow_state)
    monkeypatch.setattr(candidates_module, "dense_candidates", dense)
    first = await search(services, scope, "apple orchard", query_vector=vector)
    assert first.chunks and not first.metrics.failures
    assert seen["dense sent"] < seen["state done"] - 0.2  # not queued behind the state read
    assert _reads_in_use(services) == 0  # both connections given back

    # a search that may be cached reads the state first, and a hit reads nothing else
    again = await search(services, scope, "apple orchard", query_vector=vector)
    assert again.metrics.cache_hit and seen["dense reads"] == 1


def _reads_in_use(services) -> int:
    """Connections of the search read pool handed out and not given back."""
    stats = services.read_pool.stats()
    return stats["pool_size"] - stats["pool_available"]


async def test_a_failed_read_gives_its_connection_back(services, new_user, monkeypatch):
    user = await new_user("failed-read")
    await _doc(services, user, ORCHARD)
    vector = services.embeddings.embedder.embed_query("apple orchard")

    async def broken(conn, *args, **kwargs):
        await conn.execute("SELECT no_such_column FROM documents")

    monkeypatch.setattr(candidates_module, "dense_candidates", broken)
    result = await search(
        services, SearchScope(user_id=user.id), "apple orchard", query_vector=vector
    )
    assert result.chunks  # the keyword side answered
    assert any(f.startswith("dense:") for f in result.metrics.failures)
    assert _reads_in_use(services) == 0


async def test_reads_cut_short_leave_the_pool_healthy(services, new_user, monkeypatch):
    user = await new_user("cut-read")
    await _doc(services, user, ORCHARD)
    scope, options = SearchScope(user_id=user.id), SearchOptions(use_cache=False)
    vector = services.embeddings.embedder.embed_query("apple orchard")
    real = candidates_module.dense_candidates

    async def stuck(conn, *args, **kwargs):  # a query still running on the server
        await conn.execute("SELECT pg_sleep(5)")
        return await real(conn, *args, **kwargs)

    monkeypatch.setattr(candidates_module, "dense_candidates", stuck)
    monkeypatch.setattr(services.settings, "retrieval_timeout_seconds", 0.4)
    for _ in range(3):
        cut = await search(services, scope, "apple orchard", options, query_vector=vector)
        assert cut.metrics.timed_out and cut.chunks  # BM25 answered in time
    assert _reads_in_use(services) == 0
    monkeypatch.setattr(candidates_module, "dense_candidates", real)
    for _ in range(8):  # every pooled connection is usable again
        ok = await search(services, scope, "apple orchard", options, query_vector=vector)
        assert not ok.metrics.timed_out and not ok.metrics.failures


async def test_reads_survive_their_connections_being_dropped(services, new_user):
    user = await new_user("dropped-read")
    await _doc(services, user, ORCHARD)
    scope, options = SearchScope(user_id=user.id), SearchOptions(use_cache=False)
    vector = services.embeddings.embedder.embed_query("apple orchard")
    first = await search(services, scope, "apple orchard", options, query_vector=vector)
    with psycopg.connect(services.urls.libpq, autocommit=True) as conn:
        dropped = conn.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND application_name = %s",
            [APPLICATION_NAME],
        ).fetchone()[0]
    assert dropped >= 2  # both connections the first search held, idle in the pool
    for _ in range(3):
        again = await search(services, scope, "apple orchard", options, query_vector=vector)
        assert not again.metrics.failures and _ids(again) == _ids(first)
    assert _reads_in_use(services) == 0


class ScriptedModel(BaseChatModel):
    """Intent, then rewrites, then rerank scores: 9 for passages about the bakery."""

    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        prompt = str(messages[-1].content)
        self.calls += 1
        if "Passages:" in prompt:
            lines = [ln for ln in prompt.splitlines() if re.match(r"^\[\d+\]", ln)]
            reply = "\n".join(
                f"{i}: {9 if 'bakery' in ln else 1}" for i, ln in enumerate(lines, start=1)
            )
        elif self.calls == 1:
            reply = "factual"
        else:
            reply = "bread shop\nhoney cakes"
        return ChatResult(generations=[ChatGeneration(message=AIMessage(reply))])


async def test_expansion_and_rerank_through_the_pipeline(services, new_user):
    user = await new_user("expand")
    await _doc(services, user, LIGHTHOUSE)
    bakery = await _doc(services, user, BAKERY)
    result = await search(
        services,
        SearchScope(user_id=user.id),
        "what does the lighthouse sell",
        SearchOptions(k=2, expand=True, rerank=True, diversify=False),
        model=ScriptedModel(),
    )
    assert result.metrics.queries == ["what does the lighthouse sell", "bread shop", "honey cakes"]
    assert result.metrics.intent == "factual" and result.metrics.reranked
    assert _ids(result)[0] == bakery.document_id  # the reranker put it first
    assert {"expand", "embed", "retrieve", "fuse", "rerank", "total"} <= set(
        result.metrics.stages_ms
    )


async def test_no_other_users_chunks_under_any_mode_or_layer(services, new_user, monkeypatch):
    alice, bob = await new_user("iso"), await new_user("iso")
    await _doc(services, alice, LIGHTHOUSE)
    bobs = await _doc(services, bob, LIGHTHOUSE.replace("keeper", "warden"))
    gone = await _doc(services, alice, BAKERY)
    await delete_user_document(services, alice.id, gone.document_id)
    model = GenericFakeChatModel(
        messages=iter([AIMessage("factual"), AIMessage("lamp\nwarden")] * 20)
    )
    scope = SearchScope(user_id=alice.id)
    for threshold in (None, 0.0, 0.99):
        for mode in ("hybrid", "dense", "bm25"):
            for expand in (False, True):
                result = await search(
                    services,
                    scope,
                    "lighthouse warden lamp bread",
                    SearchOptions(
                        k=10, mode=mode, threshold=threshold, expand=expand, use_cache=False
                    ),
                    model=model,
                )
                owners = {c.record.owner_id for c in result.chunks}
                assert owners <= {alice.id}, (mode, threshold, expand)
                assert gone.document_id not in _ids(result)
                assert bobs.document_id not in _ids(result)
    monkeypatch.setattr(services.settings, "threshold_fallback", 0.999)
    await _sql(
        services,
        "UPDATE child_chunks SET embedding = NULL WHERE document_id IN "
        "(SELECT id FROM documents WHERE user_id = :u)",
        u=alice.id,
    )
    last = await search(services, scope, "warden", SearchOptions(threshold=0.9, use_cache=False))
    assert last.layer == "any_chunk" and {c.record.owner_id for c in last.chunks} == {alice.id}


@pytest.mark.parametrize("skip", [True, False])
async def test_a_table_of_contents_is_no_passage_unless_asked_for(
    services, alice_reader, monkeypatch, skip
):
    # Alice's contents line names "A Caucus-Race": keyword search ranks it high for a
    # question about the race, where it holds no answer and takes a passage's place
    from agent.retrieval.listings import is_listing

    user, result = alice_reader
    monkeypatch.setattr(services.settings, "skip_listings", skip)
    scope = SearchScope(user_id=user.id, document_ids=(result.document_id,))
    options = SearchOptions(k=5, use_cache=False)
    question = "What does Alice give the animals as prizes after the Caucus-race?"
    found = await search(services, scope, question, options)
    assert found.chunks
    assert any(is_listing(c.record.text) for c in found.chunks) is not skip
    # a question about the book's structure still finds it
    asked = await search(services, scope, "Which chapters come after the Caucus-Race?", options)
    assert any(is_listing(c.record.text) for c in asked.chunks)
