"""The ``since``/``until`` window over HTTP: ``/api/search`` and the chat endpoints only see
documents created inside it, say which window they used, refuse an unreadable one with 422,
and a user's window never reaches another user's documents."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import text

from tests.support.programs import sse_events

pytestmark = pytest.mark.usefixtures("close_checkpointer_after")

DOCS = {  # name: (days old, text)
    "old": (30, "The old almanac says the tide mill at Saltmarsh grinds barley for the abbey."),
    "new": (0.1, "The new almanac says the tide mill at Saltmarsh now grinds oats for the bakery."),
}
QUESTION = "What does the tide mill at Saltmarsh grind?"


async def _reader(services, prefix: str):
    """A user with a token and the two aged documents: ``(headers, {name: id})``."""
    from agent.ingest.pipeline import ingest_bytes
    from agent.library.accounts import add_user

    user, token = await add_user(services, f"{prefix}-{uuid.uuid4().hex[:6]}")
    ids = {}
    for name, (days, body) in DOCS.items():
        doc = await ingest_bytes(services, user.id, body.encode(), f"{name}.txt")
        async with services.engine.begin() as conn:
            await conn.execute(
                text(
                    "UPDATE documents SET created_at = now() - make_interval(secs => :s) "
                    "WHERE id = :d"
                ),
                {"s": days * 86400, "d": doc.document_id},
            )
        ids[name] = str(doc.document_id)
    return {"Authorization": f"Bearer {token}"}, ids


@pytest.fixture(scope="module")
async def readers(services):
    return await _reader(services, "window-a"), await _reader(services, "window-b")


def _documents(citations: list[dict], key: str) -> set[str]:
    return {c[key] for c in citations}


async def test_search_keeps_to_the_window(client, readers):
    (headers, ids), (_, other_ids) = readers
    names = {v: k for k, v in ids.items()}
    cases = [({}, {"old", "new"}), ({"since": "7d"}, {"new"}), ({"until": "7d"}, {"old"})]
    cases.append(({"since": "2000-01-01", "until": "2999-12-31"}, {"old", "new"}))
    for window, expected in cases:
        r = await client.post(
            "/api/search", json={"query": "tide mill", "k": 10, **window}, headers=headers
        )
        assert r.status_code == 200, r.text
        body = r.json()
        found = _documents(body["citations"], "documentId")
        assert not found & set(other_ids.values())  # never another user's
        assert {names[d] for d in found} == expected, window
        if window:
            assert body["searchMetadata"]["timeWindow"]["since" if "since" in window else "until"]
        else:
            assert body["searchMetadata"]["timeWindow"] is None


@pytest.mark.parametrize(
    ("window", "message"),
    [
        ({"since": "last week"}, "cannot read the time 'last week'"),
        ({"since": "2025-02-30"}, "cannot read the time"),
        ({"since": "2025-03-05", "until": "2025-03-01"}, "must be after 'since'"),
    ],
)
async def test_an_unreadable_window_is_a_422(client, readers, window, message):
    (headers, _), _ = readers
    searched = await client.post(
        "/api/search", json={"query": "tide mill", **window}, headers=headers
    )
    asked = await client.post("/api/ask", json={"question": QUESTION, **window}, headers=headers)
    for r in (searched, asked):
        assert r.status_code == 422, r.text
        error = r.json()["error"]
        assert error["code"] == "invalid_time_window" and message in error["message"]


async def test_chat_turns_keep_to_the_window(client, readers):
    (headers, ids), (_, other_ids) = readers
    r = await client.post("/api/ask", json={"question": QUESTION, "since": "7d"}, headers=headers)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["time_window"]["since"] and body["time_window"]["until"] is None
    assert body["citations"] and _documents(body["citations"], "document_id") == {ids["new"]}
    assert "oats" in body["answer"]

    chat = body["chat_id"]
    r = await client.post(
        f"/api/chats/{chat}/ask", json={"question": QUESTION, "until": "7d"}, headers=headers
    )
    old = r.json()
    assert _documents(old["citations"], "document_id") == {ids["old"]} and "barley" in old["answer"]
    assert not _documents(old["citations"], "document_id") & set(other_ids.values())

    r = await client.post(
        f"/api/chats/{chat}/ask/stream",
        json={"question": QUESTION, "since": "7d"},
        headers=headers,
    )
    events = sse_events(r.text)
    [cited] = [data for name, data in events if name == "citations"]
    assert _documents(cited["citations"], "document_id") == {ids["new"]}
    assert cited["conflicts"] == []
