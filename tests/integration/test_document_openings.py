"""A question about who wrote a document gets that document's opening (its byline) and
its author on record as a citable passage, on the real database and the chat graph."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage
from sqlalchemy import text

from agent.chat.document_openings import (
    asks_about_authorship,
    authorship_openings,
    opening_context,
)
from agent.db.chunks import fetch_chunks
from agent.db.scope import SearchScope
from agent.ingest.pipeline import ingest_bytes
from agent.retrieval.citations import citation_id
from agent.retrieval.types import RetrievedChunk
from graphs.chat import graph
from graphs.context import Context

_BODY = " ".join(
    f"Tide gauge {n} on the northern estuary recorded the spring tide rising by {n + 3} "
    "centimetres over the winter, while the neap tides stayed level across the season."
    for n in range(40)
)
_PAPER = (
    "Tidal Patterns of the Northern Estuary\n\n"
    "Maren Ilves, Tobias Kroon and Ada Veski\n"
    "Institute of Marine Systems, Tallinn\n\n"
    "Abstract. We measure how tides move through a shallow estuary.\n\n" + _BODY
)
_OTHER = "\n\n".join(
    f"The bakery on Mill Street bakes {n} loaves of rye every market day." for n in range(30)
)


@pytest.mark.parametrize(
    "question",
    [
        "Who is the first author of the Tidal Patterns paper?",
        "Who wrote this paper?",
        "Who are the authors?",
        "Which researchers wrote the estuary study?",
        "Was it written by Tobias Kroon?",
        "What is the name of the author?",
        "who is the lead-author",
    ],
)
def test_questions_about_who_wrote_a_document(question):
    assert asks_about_authorship(question)


@pytest.mark.parametrize(
    "question",
    [
        "What does the author say about neap tides?",
        "What does Alice say about the author of the book her sister reads?",
        "Who measured the spring tide?",
        "What did the authors find about winter tides?",
    ],
)
def test_questions_about_something_else(question):
    assert not asks_about_authorship(question)


def _ask(question: str):
    return {"messages": [HumanMessage(question)]}


async def _first_chunk(services, document_id) -> tuple[str, str]:
    """The citation id and text of a document's first chunk."""
    async with services.engine.connect() as conn:
        row = (
            await conn.execute(
                text(
                    "SELECT id, text FROM child_chunks WHERE document_id = :d AND chunk_index = 0"
                ),
                {"d": document_id},
            )
        ).one()
    return citation_id(row.id), row.text


async def _chunk(services, scope, document_id, index) -> RetrievedChunk:
    """A document's ``index``-th chunk as a retrieved chunk."""
    async with services.engine.connect() as conn:
        chunk_id = (
            await conn.execute(
                text("SELECT id FROM child_chunks WHERE document_id = :d AND chunk_index = :i"),
                {"d": document_id, "i": index},
            )
        ).scalar_one()
        record = (await fetch_chunks(conn, scope, [chunk_id]))[chunk_id]
    return RetrievedChunk(record, citation_id(chunk_id), 1.0, None, None)


async def test_the_opening_of_the_document_asked_about_is_added(services, new_user):
    user = await new_user("bylines")
    paper = await ingest_bytes(services, user.id, _PAPER.encode(), "Tidal Patterns.txt")
    bread = await ingest_bytes(services, user.id, _OTHER.encode(), "Rye Bread Notes.txt")
    scope = SearchScope(user_id=user.id)
    byline, first_text = await _first_chunk(services, paper.document_id)
    assert "Maren Ilves" in first_text

    named = await authorship_openings(
        services, scope, "Who is the first author of Tidal Patterns?", []
    )
    assert [c.citation_id for c in named] == [byline]
    assert named[0].layer == "document_opening"
    # no title named: the documents of the passages found, best first; an opening already
    # among them is not added twice
    found = [await _chunk(services, scope, paper.document_id, 1), *named]
    assert await authorship_openings(services, scope, "Who wrote it?", found) == []
    found = [await _chunk(services, scope, bread.document_id, 0), found[0]]
    unnamed = await authorship_openings(services, scope, "Who wrote it?", found)
    assert [c.citation_id for c in unnamed] == [byline]
    body = opening_context(named)
    assert body.startswith(f"{byline} [Tidal Patterns") and "Maren Ilves" in body
    assert await authorship_openings(services, scope, "How high did the tide rise?", []) == []


async def test_the_byline_reaches_the_answer_on_the_chat_graph(services, new_user):
    user = await new_user("bylines-graph")
    paper = await ingest_bytes(services, user.id, _PAPER.encode(), "Tidal Patterns.txt")
    await ingest_bytes(services, user.id, _OTHER.encode(), "Rye Bread Notes.txt")
    byline, _ = await _first_chunk(services, paper.document_id)
    # one passage: the search finds the body; the opening is added beside it
    state = await graph.ainvoke(
        _ask("Who is the first author of Tidal Patterns?"), context=Context(user=user.name, top_k=1)
    )
    assert byline in state["chunk_map"]
    # the extractive model answers from the byline's passage, citing it
    assert state["answer"].endswith(byline), state["answer"]


async def test_only_the_askers_own_openings_are_added(services, new_user):
    owner, other = await new_user("paper-owner"), await new_user("paper-other")
    await ingest_bytes(services, owner.id, _PAPER.encode(), "Tidal Patterns.txt")
    theirs = await ingest_bytes(services, other.id, _OTHER.encode(), "Rye Bread Notes.txt")
    question = "Who is the first author of Tidal Patterns?"
    scope = SearchScope(user_id=other.id)
    found = await authorship_openings(services, scope, question, [])
    assert [c.record.document_id for c in found] == [theirs.document_id]  # their only one
    state = await graph.ainvoke(_ask(question), context=Context(user=other.name))
    assert "Ilves" not in state["answer"]


async def test_a_placeholder_author_is_not_stored_or_shown(services, new_user):
    """A DOCX made from python-docx's template says its author is "python-docx"."""
    import io

    import docx
    from sqlalchemy import text as sql

    document = docx.Document()
    assert document.core_properties.author == "python-docx"
    document.add_paragraph("Maren Ilves and Tobias Kroon. " + _BODY)
    buffer = io.BytesIO()
    document.save(buffer)
    user = await new_user("placeholder-author")
    stored = await ingest_bytes(services, user.id, buffer.getvalue(), "Tide Notes.docx")
    async with services.engine.connect() as conn:
        author = (
            await conn.execute(
                sql("SELECT author FROM documents WHERE id = :d"), {"d": stored.document_id}
            )
        ).scalar()
    assert author is None
    (opening,) = await authorship_openings(
        services, SearchScope(user_id=user.id), "Who wrote Tide Notes?", []
    )
    assert "python-docx" not in opening_context([opening])
