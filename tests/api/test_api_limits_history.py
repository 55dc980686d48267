"""The monthly limit under concurrent requests, and what the chat listings return: the book
in scope and a failed turn's question with its error. Over HTTP with the real app, the real
database and the extractive chat model."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from agent.db import chats as chat_db
from agent.library.accounts import set_user_limit
from tests.support.programs import sse_events

TEXT = (
    "The lighthouse keeper Marguerite feeds seventeen herring gulls every dawn from the "
    "lantern gallery. Marguerite paints the lamp room cobalt blue each spring."
)
OTHER = "The beekeeper Anselm keeps forty hives of black bees on the heather moor."
GULLS = "How many herring gulls does Marguerite feed every dawn?"

pytestmark = pytest.mark.usefixtures("close_checkpointer_after")


async def _person(services, prefix: str):
    """A user with a token and two small documents: ``(user, headers, gulls_doc_id)``."""
    from agent.ingest.pipeline import ingest_bytes
    from agent.library.accounts import add_user

    user, token = await add_user(services, f"{prefix}-{uuid.uuid4().hex[:6]}")
    doc = await ingest_bytes(services, user.id, TEXT.encode(), f"{prefix}.txt")
    await ingest_bytes(services, user.id, OTHER.encode(), f"{prefix}-bees.txt")
    return user, {"Authorization": f"Bearer {token}"}, str(doc.document_id)


async def _usage(client, headers) -> dict:
    r = await client.get("/api/usage", headers=headers)
    assert r.status_code == 200, r.text
    return r.json()["usage"]


async def _messages(client, headers, chat_id) -> list[dict]:
    r = await client.get(f"/api/chats/{chat_id}/messages", headers=headers)
    assert r.status_code == 200, r.text
    return r.json()["messages"]


async def test_fifty_concurrent_asks_one_below_the_limit_one_succeeds(client, services):
    user, headers, _ = await _person(services, "api-race")
    await set_user_limit(services, user.name, 4)
    async with services.engine.begin() as conn:
        await chat_db.record_usage(conn, user.id, chat_messages=3)
    assert (await _usage(client, headers))["monthly_limit"] == 4

    responses = await asyncio.gather(
        *(client.post("/api/ask", json={"question": GULLS}, headers=headers) for _ in range(50))
    )
    codes = sorted(r.status_code for r in responses)
    assert codes == [200] + [429] * 49, codes
    [ok] = [r.json() for r in responses if r.status_code == 200]
    assert "seventeen" in ok["answer"]
    for r in responses:
        if r.status_code == 429:
            error = r.json()["error"]
            assert error["code"] == "monthly_limit" and "limit of 4" in error["message"]
    usage = await _usage(client, headers)
    assert usage["chat_messages"] == 4 and usage["monthly_limit"] == 4
    chats = (await client.get("/api/chats", headers=headers)).json()["chats"]
    assert [c["id"] for c in chats] == [ok["chat_id"]]  # refused turns left no chat behind
    assert [m["role"] for m in await _messages(client, headers, ok["chat_id"])] == [
        "user",
        "assistant",
    ]


async def test_listings_return_the_book_in_scope(client, services):
    _, headers, book = await _person(services, "api-book")
    scoped = (
        await client.post("/api/ask", json={"question": GULLS, "book_id": book}, headers=headers)
    ).json()
    messages = await _messages(client, headers, scoped["chat_id"])
    assert [(m["role"], m["book_id"], m["error"]) for m in messages] == [
        ("user", book, None),
        ("assistant", book, None),
    ]
    chat = (await client.get(f"/api/chats/{scoped['chat_id']}", headers=headers)).json()["chat"]
    assert chat["book_id"] == book

    r = await client.post(
        f"/api/chats/{scoped['chat_id']}/ask", json={"question": GULLS}, headers=headers
    )
    assert r.status_code == 200, r.text
    assert [m["book_id"] for m in await _messages(client, headers, scoped["chat_id"])][2:] == [
        None,
        None,
    ]
    listed = {c["id"]: c for c in (await client.get("/api/chats", headers=headers)).json()["chats"]}
    assert listed[scoped["chat_id"]]["book_id"] is None  # the chat follows its latest turn


async def test_a_failed_turn_is_listed_with_its_error_and_can_be_asked_again(
    client, services, monkeypatch
):
    import agent.chat.cited_answer

    _, headers, book = await _person(services, "api-failed")
    chat = (await client.post("/api/chats", json={}, headers=headers)).json()["chat"]["id"]

    def broken(*args, **kwargs):
        raise RuntimeError("the model fell over")

    monkeypatch.setattr(agent.chat.cited_answer, "finish_grounded", broken)
    r = await client.post(
        f"/api/chats/{chat}/ask/stream", json={"question": GULLS, "book_id": book}, headers=headers
    )
    events = sse_events(r.text)
    assert events[-1][0] == "error" and events[-1][1]["code"] == "answer_failed"
    [kept] = await _messages(client, headers, chat)
    assert kept["role"] == "user" and kept["content"] == GULLS and kept["book_id"] == book
    assert kept["error"] == {"code": "answer_failed", "message": events[-1][1]["message"]}
    assert "fell over" not in kept["error"]["message"]  # no internals
    assert (await _usage(client, headers))["chat_messages"] == 0  # a failed turn is not counted

    # a new chat's failed first turn keeps the chat, with the question in it
    r = await client.post("/api/ask", json={"question": GULLS}, headers=headers)
    assert r.status_code == 502 and r.json()["error"]["code"] == "answer_failed"
    chats = (await client.get("/api/chats", headers=headers)).json()["chats"]
    assert len(chats) == 2
    new = next(c["id"] for c in chats if c["id"] != chat)
    assert [m["error"]["code"] for m in await _messages(client, headers, new)] == ["answer_failed"]

    monkeypatch.undo()  # Retry: the page sends the same question again
    r = await client.post(
        f"/api/chats/{chat}/ask", json={"question": GULLS, "book_id": book}, headers=headers
    )
    assert r.status_code == 200 and "seventeen" in r.json()["answer"], r.text
    messages = await _messages(client, headers, chat)
    assert [(m["role"], m["error"] is None) for m in messages] == [
        ("user", False),
        ("user", True),
        ("assistant", True),
    ]
    assert (await _usage(client, headers))["chat_messages"] == 1
