"""The chat graph's context sources beside chunk search (seed 001): a numbered question
fetched verbatim and citable, and earlier turns as "previous discussion", per user."""

from __future__ import annotations

import uuid

from langchain_core.messages import HumanMessage
from sqlalchemy import text

from agent.ingest.pipeline import ingest_bytes
from agent.retrieval.citations import citation_id, cited_ids
from graphs.chat import graph, wait_for_background
from graphs.context import Context
from tests.support.samples import EXAM


def _ask(question: str):
    return {"messages": [HumanMessage(question)]}


async def _question_six_chunk(services, document_id) -> uuid.UUID:
    async with services.engine.connect() as conn:
        return (
            await conn.execute(
                text(
                    "SELECT id FROM child_chunks WHERE document_id = :d "
                    "AND text LIKE '%Question 6 –%' ORDER BY chunk_index LIMIT 1"
                ),
                {"d": document_id},
            )
        ).scalar_one()


async def test_a_numbered_question_is_fetched_and_citable(services, new_user, recording):
    model = recording
    user = await new_user("exam")
    doc = await ingest_bytes(services, user.id, EXAM.encode(), "exam.txt", title="Practice Exam")
    six = citation_id(await _question_six_chunk(services, doc.document_id))
    state = await graph.ainvoke(
        _ask("Can you explain question 6 again?"), context=Context(user=user.name)
    )
    assert state["retrieval"]["question_numbers"] == {"asked": ["6"], "found": ["6"]}
    assert six in state["chunk_map"]
    prompt = model.prompts[-1][-1].content
    # the whole question comes first in the context, labelled, and question 7 is not in it
    first = prompt.split("\n\n")[1]
    assert first.startswith(f"{six} [Practice Exam") and "question 6]" in first
    assert "Question 7" not in prompt.split(six, 1)[1].split("\n\n#chk_")[0]
    assert set(cited_ids(state["answer"])) <= set(state["chunk_map"])
    # another user asking the same gets nothing of it
    other = await new_user("exam-other")
    theirs = await graph.ainvoke(
        _ask("Can you explain question 6 again?"), context=Context(user=other.name)
    )
    assert six not in theirs["chunk_map"]


async def test_earlier_turns_come_back_as_previous_discussion(services, new_user, recording):
    model = recording
    user = await new_user("recall")
    body = "The lighthouse keeper Tomas polishes the great lamp every evening before the storm."
    await ingest_bytes(services, user.id, body.encode(), "lighthouse.txt")
    await graph.ainvoke(
        _ask("What does the lighthouse keeper polish every evening?"),
        context=Context(user=user.name),
    )
    await wait_for_background()  # the turn is embedded after the answer
    await graph.ainvoke(
        _ask("Tell me again what the keeper polishes in the lighthouse"),
        context=Context(user=user.name),  # a new chat
    )
    prompt = model.prompts[-1][-1].content
    assert "Previous discussion" in prompt and "(another chat" in prompt
    assert "What does the lighthouse keeper polish every evening?" in prompt
    # never across users, even for the same question
    stranger = await new_user("recall-other")
    await ingest_bytes(services, stranger.id, body.encode(), "lighthouse.txt")
    await graph.ainvoke(
        _ask("Tell me again what the keeper polishes in the lighthouse"),
        context=Context(user=stranger.name),
    )
    assert "Previous discussion" not in model.prompts[-1][-1].content
