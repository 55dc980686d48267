"""A summary request that names one of several books by its title takes that book's
summary (Path B), on the real database and the chat graph."""

from __future__ import annotations

import uuid

from langchain_core.messages import HumanMessage
from sqlalchemy import text

from agent.chat.books import book_named_in
from agent.db.scope import SearchScope
from agent.ingest.pipeline import ingest_bytes
from graphs.chat import graph
from graphs.context import Context
from tests.support.samples import book_text


def _ask(question: str):
    return {"messages": [HumanMessage(question)]}


async def _book_of(services, state) -> str:
    """The book the turn's answer was saved with ('' for none)."""
    async with services.engine.connect() as conn:
        book = (
            await conn.execute(
                text(
                    "SELECT document_id FROM chat_messages WHERE chat_id = :c "
                    "AND role = 'assistant' ORDER BY created_at DESC LIMIT 1"
                ),
                {"c": uuid.UUID(state["chat_id"])},
            )
        ).scalar()
    return str(book or "")


async def test_a_summary_request_naming_a_title_takes_that_books_summary(services, new_user):
    user = await new_user("named")
    first = await ingest_bytes(
        services, user.id, book_text().encode(), "The Walrus and the Carpenter.txt"
    )
    second = await ingest_bytes(services, user.id, book_text().encode(), "Oysters by the Sea.txt")
    context = Context(user=user.name)

    named = await graph.ainvoke(_ask(f"Summarize {second.title}."), context=context)
    assert named["route"] == "global_summary"
    assert await _book_of(services, named) == str(second.document_id)
    assert second.title in named["route_reason"]
    # case and punctuation do not matter
    typed = await graph.ainvoke(
        _ask(f"give me an overview of '{first.title.upper()}' please"), context=context
    )
    assert typed["route"] == "global_summary"
    assert await _book_of(services, typed) == str(first.document_id)
    # two titles, or none: no single book, so Path A across the books
    both = await graph.ainvoke(_ask(f"Summarize {first.title} and {second.title}"), context=context)
    unnamed = await graph.ainvoke(_ask("Summarize the story"), context=context)
    assert both["route"] == unnamed["route"] == "hybrid"
    # a title in a question that asks for no summary changes nothing
    specific = await graph.ainvoke(
        _ask(f"Who walks along the shore in {first.title}?"), context=context
    )
    assert specific["route"] == "hybrid" and await _book_of(services, specific) == ""


async def test_only_the_users_own_titles_are_matched(services, new_user):
    owner, other = await new_user("titled"), await new_user("untitled")
    theirs = await ingest_bytes(
        services, owner.id, book_text().encode(), "Sealing Wax and Cabbages.txt"
    )
    await ingest_bytes(services, other.id, book_text().encode(), "a.txt")
    await ingest_bytes(services, other.id, book_text().encode(), "b.txt")
    question = f"Summarize {theirs.title}"
    assert await book_named_in(services, SearchScope(user_id=other.id), question) is None
    found = await book_named_in(services, SearchScope(user_id=owner.id), question)
    assert found is not None and found.id == theirs.document_id
    # a one-word title is too likely to be a common word to count as named
    await ingest_bytes(services, owner.id, book_text().encode(), "tale.txt")
    assert (
        await book_named_in(services, SearchScope(user_id=owner.id), "Summarize the tale") is None
    )


async def test_keywords_in_a_named_title_do_not_change_the_route(services, new_user):
    user = await new_user("titlewords")
    await ingest_bytes(services, user.id, book_text().encode(), "Why Nations Fail.txt")
    await ingest_bytes(services, user.id, book_text().encode(), "Other Shores.txt")
    context = Context(user=user.name)
    who = await graph.ainvoke(_ask("Who wrote Why Nations Fail?"), context=context)
    assert who["route"] == "hybrid", who["route_reason"]
    why = await graph.ainvoke(_ask("Why do the walrus and the carpenter walk?"), context=context)
    assert why["route"] == "deep_reasoning"
    # another user's title is not theirs to name: its words count
    stranger = await new_user("titlewords-other")
    await ingest_bytes(services, stranger.id, book_text().encode(), "Notes.txt")
    theirs = await graph.ainvoke(
        _ask("Who wrote Why Nations Fail?"), context=Context(user=stranger.name)
    )
    assert theirs["route"] == "deep_reasoning"
