"""A comparison on Path C reads passages on each of its subjects (agent.retrieval.subject_search),
on the real Postgres with Alice in Wonderland ingested."""

from __future__ import annotations

from dataclasses import replace

from agent.chat.retrieval_step import search_options
from agent.db.scope import SearchScope
from agent.retrieval.knowledge import KnowledgeSearch, knowledge_search
from agent.retrieval.ranking import passage_of
from agent.retrieval.search import SearchResult, search


async def _searched(services, alice_reader, question: str, mode: str = "deep", k: int = 0):
    """``question`` as Path C (or ``mode``) searches it in the reader's book: the knowledge
    search, or with ``k`` the plain search for ``k`` passages."""
    user, book = alice_reader
    scope = SearchScope(user_id=user.id, document_ids=(book.document_id,))
    options = search_options(services.settings, "local", mode, None)
    if k:
        return await search(services, scope, question, replace(options, k=k, fill_to=k))
    return await knowledge_search(services, scope, question, options, cite_holders=True)


async def test_each_subject_of_a_comparison_leads_with_its_own_best_passage(services, alice_reader):
    found: KnowledgeSearch = await _searched(
        services, alice_reader, "Compare the Caterpillar and the Gryphon as advisers to Alice."
    )
    alone: list[SearchResult] = [
        await _searched(services, alice_reader, q, k=2)
        for q in ("the Caterpillar advisers to Alice", "the Gryphon advisers to Alice")
    ]
    chunks = found.result.chunks
    user, _ = alice_reader
    assert len(chunks) >= 2 and all(c.record.owner_id == user.id for c in chunks)
    # the best passage on the first subject, then the best on the second
    assert chunks[0].citation_id == alone[0].chunks[0].citation_id
    assert passage_of(chunks[1].record) == passage_of(alone[1].chunks[0].record)
    assert "caterpillar" in chunks[0].record.text.lower()
    assert "gryphon" in chunks[1].record.text.lower()
    shown = found.context.text.lower()
    assert "caterpillar" in shown and "gryphon" in shown
    assert found.missing_subjects == ()


async def test_a_subject_no_passage_is_on_gives_none_and_is_reported_missing(
    services, alice_reader
):
    found = await _searched(services, alice_reader, "Compare the Hatter and Sherlock Holmes.")
    hatter = await _searched(services, alice_reader, "the Hatter", k=2)
    assert found.missing_subjects == ("Sherlock Holmes",)
    assert found.result.chunks
    assert {c.citation_id for c in found.result.chunks} <= {c.citation_id for c in hatter.chunks}


async def test_a_comparison_of_two_things_the_book_never_mentions_finds_nothing(
    services, alice_reader
):
    # the low-similarity layer admits some passage for each; none says either name
    found = await _searched(services, alice_reader, "Compare Real Madrid and Barcelona.")
    assert found.missing_subjects == ("Real Madrid", "Barcelona")
    assert found.result.chunks == [] and found.context.chunks == []


async def test_a_specific_question_naming_two_subjects_is_searched_whole(services, alice_reader):
    # only Path C splits a comparison: a specific search stays one query
    question = "Compare the Hatter and the March Hare."
    found = await _searched(services, alice_reader, question, mode="specific")
    user, book = alice_reader
    scope = SearchScope(user_id=user.id, document_ids=(book.document_id,))
    whole = await search(
        services, scope, question, search_options(services.settings, "local", "specific", None)
    )
    assert [c.citation_id for c in found.result.chunks] == [c.citation_id for c in whole.chunks]
    assert found.missing_subjects == ()
