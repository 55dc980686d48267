"""The ``read_summary`` tool (seed 003): the stored summaries of the books a turn may see,
best match first, within a budget; never another user's; and, chosen by the model in the
chat graph, brought to the answer as background."""

from __future__ import annotations

from langchain_core.messages import HumanMessage

from agent.chat.tool_selection import KNOWLEDGE, SUMMARY
from agent.db import summaries
from agent.db.scope import SearchScope
from agent.ingest.pipeline import ingest_bytes
from agent.library.book_summaries import read_summaries
from graphs.chat import graph
from graphs.context import Context

SEA = "The keeper Tomas tends the Skerry lighthouse through the winter storms. " * 3
BREAD = "The harbour bakery bakes rye bread and honey cakes on market days. " * 3


async def _book(services, user, body: str, name: str, summary: str | None = None):
    result = await ingest_bytes(services, user.id, body.encode(), name)
    if summary:
        async with services.engine.begin() as conn:
            await summaries.save_global_summary(conn, result.document_id, summary, "test")
    return result.document_id


async def test_summaries_of_the_books_in_scope_best_match_first(services, new_user):
    reader, other = await new_user("summaries"), await new_user("summaries-other")
    await _book(services, reader, SEA, "sea.txt", "A keeper keeps a lighthouse alive in storms.")
    bread = await _book(services, reader, BREAD, "bread.txt", "A bakery feeds a harbour town.")
    await _book(services, reader, "An untitled note without summary. " * 3, "note.txt")
    await _book(services, other, SEA, "secret.txt", "Secret: the lighthouse was sold.")

    scope = SearchScope(user_id=reader.id)
    text = await read_summaries(services, scope, "what does the bakery sell", max_chars=4000)
    assert text.index("bakery feeds") < text.index("lighthouse alive")
    assert "Secret" not in text and "untitled" not in text
    # a narrower scope, and a budget that fits one book only
    only = await read_summaries(
        services, SearchScope(user_id=reader.id, document_ids=(bread,)), "x", max_chars=4000
    )
    assert "bakery" in only and "lighthouse" not in only
    short = await read_summaries(services, scope, "lighthouse keeper", max_chars=260)
    assert "lighthouse alive" in short and "bakery" not in short and len(short) <= 260
    # another user sees only their own book
    theirs = await read_summaries(services, SearchScope(user_id=other.id), "x", max_chars=4000)
    assert "Secret" in theirs and "bakery" not in theirs


async def test_chapter_summaries_stand_in_for_a_missing_book_summary(services, new_user):
    user = await new_user("chapters-only")
    document = await _book(services, user, SEA, "sea.txt")
    async with services.engine.begin() as conn:
        await summaries.save_chapter_summary(
            conn,
            document,
            summaries.ChapterSummary(0, "Winter", "The storms come and the lamp holds.", [], "t"),
        )
    text = await read_summaries(services, SearchScope(user_id=user.id), "storm", max_chars=2000)
    assert "Winter: The storms come and the lamp holds." in text


async def test_the_model_reads_the_summaries_before_answering(services, new_user, scripted):
    user = await new_user("react-summary")
    await _book(services, user, SEA, "sea.txt", "A keeper keeps a lighthouse alive in storms.")
    scripted.decisions = [(SUMMARY, "what is the book about"), None]
    state = await graph.ainvoke(
        {"messages": [HumanMessage("What does the keeper Tomas tend?")]},
        context=Context(user=user.name, tool_selection=True),
    )
    assert scripted.offered[0] == [KNOWLEDGE, SUMMARY]
    assert state["tool_log"][0]["tool"] == SUMMARY
    assert "characters of book summaries" in state["tool_log"][0]["outcome"]
    # the answer was written with the summary in view, and still cites the passages
    answer_prompt = " ".join(str(m.content) for m in scripted.prompts[-1])
    assert "lighthouse alive in storms" in answer_prompt
    assert state["citations"] and set(state["chunk_map"]) >= {c["id"] for c in state["citations"]}
