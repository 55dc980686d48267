"""A comparison on Path C reads passages on each of its subjects (agent.retrieval.subject_search),
on the real Postgres with Alice in Wonderland ingested."""

from __future__ import annotations

from dataclasses import replace

from agent.chat.retrieval_step import search_options
from agent.db.scope import SearchScope
from agent.retrieval.knowledge import knowledge_search
from agent.retrieval.ranking import passage_of
from agent.retrieval.search import search


async def test_each_subject_of_a_comparison_leads_with_its_own_best_passage(services, alice_reader):
    user, book = alice_reader
    scope = SearchScope(user_id=user.id, document_ids=(book.document_id,))
    options = search_options(services.settings, "local", "deep", None)
    question = "Compare the Caterpillar and the Gryphon as advisers to Alice."
    found = await knowledge_search(services, scope, question, options, cite_holders=True)
    alone = [
        await search(services, scope, q, replace(options, k=2, fill_to=2))
        for q in ("the Caterpillar advisers to Alice", "the Gryphon advisers to Alice")
    ]
    chunks = found.result.chunks
    assert len(chunks) >= 2 and all(c.record.owner_id == user.id for c in chunks)
    # the best passage on the first subject, then the best on the second
    assert chunks[0].citation_id == alone[0].chunks[0].citation_id
    assert passage_of(chunks[1].record) == passage_of(alone[1].chunks[0].record)
    assert "caterpillar" in chunks[0].record.text.lower()
    assert "gryphon" in chunks[1].record.text.lower()
    shown = found.context.text.lower()
    assert "caterpillar" in shown and "gryphon" in shown


async def test_a_subject_the_book_does_not_hold_gives_no_passages(services, alice_reader):
    user, book = alice_reader
    scope = SearchScope(user_id=user.id, document_ids=(book.document_id,))
    options = search_options(services.settings, "local", "deep", None)
    found = await knowledge_search(
        services, scope, "Compare the Hatter and Sherlock Holmes.", options, cite_holders=True
    )
    hatter = await search(services, scope, "the Hatter", replace(options, k=2, fill_to=2))
    assert found.result.chunks
    assert {c.citation_id for c in found.result.chunks} <= {c.citation_id for c in hatter.chunks}


async def test_a_specific_question_naming_two_subjects_is_searched_whole(services, alice_reader):
    # only Path C splits a comparison: a specific search stays one query
    user, book = alice_reader
    scope = SearchScope(user_id=user.id, document_ids=(book.document_id,))
    options = search_options(services.settings, "local", "specific", None)
    question = "Compare the Hatter and the March Hare."
    found = await knowledge_search(services, scope, question, options)
    whole = await search(services, scope, question, options)
    assert [c.citation_id for c in found.result.chunks] == [c.citation_id for c in whole.chunks]


async def test_a_subject_no_passage_is_on_is_reported_missing(services, alice_reader):
    user, book = alice_reader
    scope = SearchScope(user_id=user.id, document_ids=(book.document_id,))
    options = search_options(services.settings, "local", "deep", None)
    one = await knowledge_search(
        services, scope, "Compare the Hatter and Sherlock Holmes.", options, cite_holders=True
    )
    assert one.missing_subjects == ("Sherlock Holmes",)
    assert all(
        "hatter" in f"{c.record.text} {c.record.parent_text}".lower() for c in one.result.chunks
    )
    held = await knowledge_search(
        services, scope, "Compare the Hatter and the March Hare.", options, cite_holders=True
    )
    assert held.missing_subjects == ()


async def test_a_comparison_of_two_things_the_book_never_mentions_finds_nothing(
    services, alice_reader
):
    # the low-similarity layer admits some passage for each; none says either name
    user, book = alice_reader
    scope = SearchScope(user_id=user.id, document_ids=(book.document_id,))
    options = search_options(services.settings, "local", "deep", None)
    found = await knowledge_search(
        services, scope, "Compare Real Madrid and Barcelona.", options, cite_holders=True
    )
    assert found.missing_subjects == ("Real Madrid", "Barcelona")
    assert found.result.chunks == [] and found.context.chunks == []
