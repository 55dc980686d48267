"""Per-user monthly limits counted atomically, and what a chat keeps: the book in scope, a
failed turn's question with its error, and a running summary after every turn. The real
graph with the extractive model on the real Postgres."""

from __future__ import annotations

import asyncio
import uuid
from datetime import date

import pytest
from langchain_core.messages import HumanMessage
from sqlalchemy import text

import agent.chat.cited_answer
from agent.chat import turn_log
from agent.db import chats
from agent.ingest.pipeline import ingest_bytes
from agent.library.accounts import list_users, set_user_limit
from agent.library.usage import month_usage
from graphs.chat import graph
from graphs.context import Context

FERRY = (
    "The ferry Kittiwake leaves Oban at seven every morning. Its engineer, Morag Ellison, "
    "keeps a brass barometer in the wheelhouse and logs the pressure every hour."
)
FERRY_Q = "When does the ferry Kittiwake leave Oban?"


def _ask(question: str) -> dict:
    return {"messages": [HumanMessage(question)]}


async def _turns_counted(services, user_id) -> int:
    async with services.engine.connect() as conn:
        return await chats.messages_this_month(conn, user_id)


async def _count(services, user_id, turns: int) -> None:
    """Put ``turns`` chat turns on the user's counter for this month."""
    async with services.engine.begin() as conn:
        await chats.record_usage(conn, user_id, chat_messages=turns)


async def _messages(services, chat_id: str) -> list:
    async with services.engine.connect() as conn:
        rows = await conn.execute(
            text(
                "SELECT role, content, document_id, error, route FROM chat_messages "
                "WHERE chat_id = :c ORDER BY created_at, id"
            ),
            {"c": uuid.UUID(chat_id)},
        )
        return rows.all()


async def _chat_book(services, chat_id: str):
    async with services.engine.connect() as conn:
        found = await conn.execute(
            text("SELECT document_id FROM chats WHERE id = :c"), {"c": uuid.UUID(chat_id)}
        )
        return found.scalar()


async def _summary(services, chat_id: str) -> str | None:
    async with services.engine.connect() as conn:
        found = await conn.execute(
            text("SELECT conversation_summary FROM chats WHERE id = :c"),
            {"c": uuid.UUID(chat_id)},
        )
        return found.scalar()


# --- limits --------------------------------------------------------------------------------


async def test_a_users_own_limit_overrides_the_default(services, new_user, monkeypatch):
    monkeypatch.setattr(services.settings, "monthly_message_limit", 2)
    user, other = await new_user("own-limit"), await new_user("default-limit")
    assert await turn_log.monthly_limit(services, user.id) == 2
    await set_user_limit(services, user.name, 3)
    assert await turn_log.monthly_limit(services, user.id) == 3
    assert await turn_log.monthly_limit(services, other.id) == 2
    assert (await month_usage(services, user.id)).monthly_limit == 3

    reserved = [await turn_log.reserve_turn(services, user.id) for _ in range(4)]
    assert reserved[:3] == [date.today().replace(day=1).isoformat()] * 3 and reserved[3] is None
    assert [await turn_log.reserve_turn(services, other.id) for _ in range(3)][2] is None
    assert await _turns_counted(services, user.id) == 3
    assert await _turns_counted(services, other.id) == 2

    await set_user_limit(services, user.name, None)  # back on the default (2): still over it
    assert await turn_log.reserve_turn(services, user.id) is None
    await set_user_limit(services, user.name, 0)  # no turns at all, even with a fresh month row
    assert await turn_log.reserve_turn(services, user.id) is None
    listed = {u.name: u for u in await list_users(services)}
    assert listed[user.name].monthly_message_limit == 0
    assert listed[user.name].turns_this_month == 3
    assert listed[other.name].monthly_message_limit is None
    with pytest.raises(ValueError, match="no user named"):
        await set_user_limit(services, f"nobody-{uuid.uuid4().hex[:6]}", 5)

    monkeypatch.setattr(services.settings, "monthly_message_limit", None)  # unlimited: counted
    fresh = await new_user("unlimited")
    for _ in range(5):
        assert await turn_log.reserve_turn(services, fresh.id) is not None
    assert await _turns_counted(services, fresh.id) == 5


async def test_concurrent_reservations_never_pass_the_limit(services, new_user):
    user = await new_user("race")
    await set_user_limit(services, user.name, 7)
    await _count(services, user.id, 6)  # one turn left
    results = await asyncio.gather(*(turn_log.reserve_turn(services, user.id) for _ in range(50)))
    assert sum(r is not None for r in results) == 1
    assert await _turns_counted(services, user.id) == 7

    # a user without a row this month yet: the first inserts concurrently, too
    fresh = await new_user("race-fresh")
    await set_user_limit(services, fresh.name, 3)
    results = await asyncio.gather(*(turn_log.reserve_turn(services, fresh.id) for _ in range(30)))
    assert sum(r is not None for r in results) == 3
    assert await _turns_counted(services, fresh.id) == 3


async def test_fifty_concurrent_graph_turns_one_below_the_limit(services, new_user):
    user = await new_user("graph-race")
    await ingest_bytes(services, user.id, FERRY.encode(), "ferry.txt")
    await set_user_limit(services, user.name, 3)
    await _count(services, user.id, 2)
    chat_ids = [str(uuid.uuid4()) for _ in range(50)]
    finals = await asyncio.gather(
        *(
            graph.ainvoke(_ask(FERRY_Q), context=Context(user=user.name, chat_id=c))
            for c in chat_ids
        )
    )
    answered = [f for f in finals if f["model_used"] != "monthly_limit"]
    refused = [f for f in finals if f["model_used"] == "monthly_limit"]
    assert len(answered) == 1 and len(refused) == 49
    assert "seven" in answered[0]["answer"].lower()
    assert all("limit of 3 messages" in f["answer"] for f in refused)
    assert await _turns_counted(services, user.id) == 3
    saved = [c for c in chat_ids if await _messages(services, c)]
    assert len(saved) == 1 and len(await _messages(services, saved[0])) == 2


# --- a failed turn -------------------------------------------------------------------------


async def test_a_failed_turn_keeps_its_question_and_is_not_counted(services, new_user, monkeypatch):
    user = await new_user("failing")
    doc = await ingest_bytes(services, user.id, FERRY.encode(), "ferry.txt")
    await ingest_bytes(services, user.id, b"Another note, about puffins on Staffa.", "p.txt")
    book = str(doc.document_id)
    await set_user_limit(services, user.name, 1)
    chat = str(uuid.uuid4())

    def broken(*args, **kwargs):
        raise RuntimeError("the model fell over")

    monkeypatch.setattr(agent.chat.cited_answer, "finish_grounded", broken)
    with pytest.raises(RuntimeError, match="fell over"):
        await graph.ainvoke(_ask(FERRY_Q), context=Context(user=user.name, chat_id=chat, book=book))
    [question] = await _messages(services, chat)
    assert question.role == "user" and question.content == FERRY_Q
    assert question.error == {
        "code": "answer_failed",
        "message": "The answer could not be produced. Try again.",
    }
    assert str(question.document_id) == book and str(await _chat_book(services, chat)) == book
    assert await _turns_counted(services, user.id) == 0  # given back: the limit of 1 is free

    monkeypatch.undo()  # the same question again: answered, saved with its book, counted once
    again = await graph.ainvoke(
        _ask(FERRY_Q), context=Context(user=user.name, chat_id=chat, book=book)
    )
    assert again["route"] != "over_limit" and "seven" in again["answer"].lower()
    rows = await _messages(services, chat)
    assert [(r.role, r.error) for r in rows] == [
        ("user", question.error),
        ("user", None),
        ("assistant", None),
    ]
    assert {str(r.document_id) for r in rows} == {book}
    assert await _turns_counted(services, user.id) == 1

    # a turn without a book: saved without one, and the chat follows its latest turn
    await set_user_limit(services, user.name, None)
    await graph.ainvoke(
        _ask("What does Morag keep?"), context=Context(user=user.name, chat_id=chat)
    )
    rows = await _messages(services, chat)
    assert [r.document_id for r in rows[-2:]] == [None, None]
    assert await _chat_book(services, chat) is None


# --- the running summary -------------------------------------------------------------------


async def test_the_summary_takes_every_turn_small_talk_included(services, new_user):
    user = await new_user("summary")
    await ingest_bytes(services, user.id, FERRY.encode(), "ferry.txt")
    chat = str(uuid.uuid4())
    hello = await graph.ainvoke(_ask("Hello there!"), context=Context(user=user.name, chat_id=chat))
    assert hello["route"] == "general"
    after_hello = await _summary(services, chat)
    assert after_hello and "Hello there!" in after_hello

    name = await graph.ainvoke(
        _ask("What is your name?"), context=Context(user=user.name, chat_id=chat)
    )
    assert name["route"] == "direct"
    after_name = await _summary(services, chat)
    assert "What is your name?" in after_name and after_name.startswith(after_hello)

    await graph.ainvoke(_ask(FERRY_Q), context=Context(user=user.name, chat_id=chat))
    after_ferry = await _summary(services, chat)
    assert "Kittiwake" in after_ferry and "Hello there!" in after_ferry
    thanks = await graph.ainvoke(
        _ask("thanks so much"), context=Context(user=user.name, chat_id=chat)
    )
    assert thanks["route"] == "general"
    assert (await _summary(services, chat)).splitlines()[-1].startswith("Q: thanks so much")
