"""Focused passages cite the chunk that holds each sentence (agent.retrieval.focus), on the
real Postgres: a passage is cut from a parent window, so its best sentences may lie in a
sibling of the retrieved child; the citation must open the paragraph that says them."""

from __future__ import annotations

from agent.db.scope import SearchScope
from agent.ingest.sentences import split_sentences
from agent.retrieval.focus import GAP
from agent.retrieval.knowledge import knowledge_search
from agent.retrieval.search import SearchOptions
from bench.eval_answers_data import load_dataset
from tests.support.paths import ROOT


def _alice_questions() -> list[str]:
    items = load_dataset(ROOT / "tests" / "data" / "answers.jsonl")
    return [
        i.question
        for i in items
        if not i.unanswerable and any("alice" in p.name for p in i.documents)
    ]


async def test_every_focused_sentence_is_cited_to_the_chunk_that_holds_it(services, alice_reader):
    user, book = alice_reader
    settings = services.settings
    scope = SearchScope(user_id=user.id, document_ids=(book.document_id,))
    questions = _alice_questions()
    assert len(questions) >= 10
    siblings = 0
    for question in questions:
        found = await knowledge_search(
            services,
            scope,
            question,
            SearchOptions(k=settings.local_top_k, threshold=settings.threshold_specific),
            max_chars=settings.local_max_context_chars,
            cite_holders=True,
        )
        retrieved = {c.citation_id for c in found.result.chunks}
        parents = {c.record.parent_id for c in found.result.chunks}
        found_by = {(c.score, c.similarity) for c in found.result.chunks}
        for chunk in found.context.chunks:
            assert chunk.record.owner_id == user.id
            own = " ".join(chunk.record.text.split())
            for sentence in split_sentences(found.context.bodies[chunk.citation_id]):
                core = sentence.strip(GAP + " ")
                # a sentence running across two chunks: the one holding most of it
                half = len(core) // 2
                held = core in own or core[: half + 1] in own or core[half:] in own
                assert held, (question, chunk.citation_id, sentence)
            if chunk.citation_id not in retrieved:  # a sibling: from a retrieved chunk's parent
                siblings += 1
                assert chunk.record.parent_id in parents
                assert (chunk.score, chunk.similarity) in found_by
            assert chunk.citation_id in found.context.text
    assert siblings  # the questions do reach past their retrieved children


async def test_a_result_list_keeps_to_the_chunks_found(services, alice_reader):
    # the search API and tool answer with what was found (top k), not its siblings
    user, book = alice_reader
    scope = SearchScope(user_id=user.id, document_ids=(book.document_id,))
    found = await knowledge_search(
        services, scope, "What is the name of Alice's cat?", SearchOptions(k=2)
    )
    assert {c.citation_id for c in found.context.chunks} <= {
        c.citation_id for c in found.result.chunks
    }


async def test_the_cpu_models_passages_are_capped_and_keep_their_answers(services, alice_reader):
    # long sentences keep fewer neighbours: a shorter prompt, the same answers in it
    user, book = alice_reader
    settings = services.settings
    cap = settings.focus_passage_chars("local")
    assert cap and settings.focus_passage_chars("openai:gpt-4o-mini") is None
    scope = SearchScope(user_id=user.id, document_ids=(book.document_id,))
    items = [
        i
        for i in load_dataset(ROOT / "tests" / "data" / "answers.jsonl")
        if not i.unanswerable and any("alice" in p.name for p in i.documents)
    ]
    shorter = 0
    for item in items:
        texts = []
        for most in (None, cap):
            found = await knowledge_search(
                services,
                scope,
                item.question,
                SearchOptions(k=settings.local_top_k, threshold=settings.threshold_specific),
                max_chars=settings.local_max_context_chars,
                cite_holders=True,
                passage_chars=most,
            )
            texts.append(found.context.text)
        whole, capped = texts
        assert len(capped) <= len(whole), item.question
        shorter += len(capped) < len(whole)
        for answer in item.answers:
            if answer.lower() in whole.lower():
                assert answer.lower() in capped.lower(), (item.question, answer)
    assert shorter >= 3


async def test_a_one_word_question_reads_one_passage_that_holds_its_word(services, alice_reader):
    # "Who is Dinah?": every passage is ranked by that word, a second one only repeats it
    user, book = alice_reader
    settings = services.settings
    scope = SearchScope(user_id=user.id, document_ids=(book.document_id,))

    async def context(question: str, lone: bool):
        found = await knowledge_search(
            services,
            scope,
            question,
            SearchOptions(
                k=settings.local_top_k,
                threshold=settings.threshold_specific,
                admitted_floor=settings.threshold_admitted_floor_local,
            ),
            max_chars=settings.local_max_context_chars,
            cite_holders=True,
            passage_chars=settings.focus_passage_chars("local"),
            lone_word_first=lone,
        )
        return found

    every = await context("Who is Dinah?", lone=False)
    lone = await context("Who is Dinah?", lone=True)
    assert len(every.result.chunks) >= 2
    shown = {c.record.parent_id or c.record.id for c in lone.context.chunks}
    assert len(shown) == 1  # one passage (maybe cited to two sibling chunks)
    assert "dinah" in lone.context.text.lower()
    assert len(lone.context.text) < len(every.context.text)
    assert lone.context.text.split("\n\n")[0] == every.context.text.split("\n\n")[0]
    # a question of more words keeps its passages
    wider = await context("What does Dinah catch?", lone=True)
    assert wider.context.text == (await context("What does Dinah catch?", lone=False)).context.text
