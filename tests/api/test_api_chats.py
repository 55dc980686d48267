"""The HTTP API's search, chats, asking (JSON and SSE), corrections and usage, over HTTP
with the real app, the real database and the extractive chat model."""

import uuid

import pytest

from agent.retrieval.citations import cited_ids
from tests.support.programs import sse_events

A_TEXT = (
    "The lighthouse keeper Marguerite feeds seventeen herring gulls every dawn from the "
    "lantern gallery. Marguerite paints the lamp room cobalt blue each spring.\n\n"
    "The supply boat Albatross brings paraffin, flour and letters to the lighthouse on "
    "Thursdays. Its skipper, Tobias Wren, plays the concertina while unloading crates."
)
B_TEXT = (
    "The beekeeper Anselm keeps forty hives of black bees on the heather moor. Anselm "
    "harvests ling honey in late August and sells it at the Kirkby market.\n\n"
    "A badger named Grisel raids the lowest hive every October, so Anselm fences it."
)
GULLS = "How many herring gulls does Marguerite feed every dawn?"


pytestmark = pytest.mark.usefixtures("close_checkpointer_after")


async def _person(services, prefix: str, text: str | None):
    """A user with a token (and a small document): ``(user, headers, document_id)``."""
    from agent.ingest.pipeline import ingest_bytes
    from agent.library.accounts import add_user

    user, token = await add_user(services, f"{prefix}-{uuid.uuid4().hex[:6]}")
    doc = None
    if text:
        doc = (await ingest_bytes(services, user.id, text.encode(), f"{prefix}.txt")).document_id
    return user, {"Authorization": f"Bearer {token}"}, doc


@pytest.fixture(scope="module")
async def people(services):
    """Two users, each with a token and a document only they can read."""
    return {
        "a": await _person(services, "api-a", A_TEXT),
        "b": await _person(services, "api-b", B_TEXT),
    }


async def _new_chat(client, headers, **body) -> str:
    r = await client.post("/api/chats", json=body, headers=headers)
    assert r.status_code == 201, r.text
    return r.json()["chat"]["id"]


async def _messages(client, headers, chat_id) -> list[dict]:
    r = await client.get(f"/api/chats/{chat_id}/messages", headers=headers)
    assert r.status_code == 200, r.text
    return r.json()["messages"]


async def _chat_state(services, chat_id: str) -> dict:
    """The chat's checkpointed LangGraph state (what the last turn worked with)."""
    from graphs.checkpoint import open_checkpointer

    graph = (await open_checkpointer(services)).chat_graph
    return (await graph.aget_state({"configurable": {"thread_id": chat_id}})).values


async def test_every_route_needs_a_valid_token(client):
    some = str(uuid.uuid4())
    routes = [
        ("POST", "/api/search", {"query": "gulls"}),
        ("POST", "/api/chats", {}),
        ("GET", "/api/chats", None),
        ("GET", f"/api/chats/{some}", None),
        ("GET", f"/api/chats/{some}/messages", None),
        ("POST", f"/api/chats/{some}/ask", {"question": "hi"}),
        ("POST", f"/api/chats/{some}/ask/stream", {"question": "hi"}),
        ("POST", "/api/ask", {"question": "hi"}),
        ("POST", "/api/ask/stream", {"question": "hi"}),
        ("POST", "/api/corrections", {"question": "q", "correction": "c"}),
        ("GET", "/api/corrections", None),
        ("DELETE", f"/api/corrections/{some}", None),
        ("GET", "/api/usage", None),
    ]
    for headers in ({}, {"Authorization": "Bearer qk_not-a-token"}, {"Authorization": "Basic x"}):
        for method, path, body in routes:
            r = await client.request(method, path, json=body, headers=headers)
            assert r.status_code == 401, (method, path, r.status_code)
            assert r.json()["error"]["code"] == "unauthorized"


async def test_ask_in_a_chat_answers_with_resolvable_citations(client, people):
    _, headers, doc = people["a"]
    r = await client.post(
        "/api/chats", json={"title": "Lighthouse", "persona": "a patient guide"}, headers=headers
    )
    assert r.status_code == 201
    chat = r.json()["chat"]
    assert chat["title"] == "Lighthouse" and chat["persona"] == "a patient guide"
    assert set(chat) == {"id", "title", "persona", "created_at", "updated_at", "book_id"}

    r = await client.post(f"/api/chats/{chat['id']}/ask", json={"question": GULLS}, headers=headers)
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) >= {
        "answer",
        "route",
        "model_used",
        "citations",
        "sources",
        "chunk_map",
        "usage",
        "chat_id",
        "message_id",
    }
    assert "seventeen" in body["answer"] and body["route"] == "hybrid"
    assert body["route_reason"] == body["routing"]["reason"] == "specific question"
    assert body["chat_id"] == chat["id"] and body["usage"]["tokens"] > 0
    cited = cited_ids(body["answer"])
    assert cited and set(cited) <= set(body["chunk_map"])
    assert {c["id"] for c in body["citations"]} == set(cited)
    assert all(c["document_id"] == str(doc) for c in body["citations"])
    assert all(body["chunk_map"][c["id"]] == c["chunk_id"] for c in body["citations"])

    messages = await _messages(client, headers, chat["id"])
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert messages[0]["content"] == GULLS
    saved = messages[1]
    assert saved["id"] == body["message_id"] and saved["content"] == body["answer"]
    assert saved["citations"] == body["citations"] and saved["chunk_map"] == body["chunk_map"]
    assert saved["tokens_used"] == body["usage"]["tokens"] and saved["route"] == "hybrid"
    assert saved["routing"] == body["routing"] and messages[0]["routing"] is None

    listed = (await client.get("/api/chats", headers=headers)).json()["chats"]
    assert listed[0]["id"] == chat["id"]  # the most recently active first
    r = await client.get(f"/api/chats/{chat['id']}", headers=headers)
    assert r.json()["chat"]["id"] == chat["id"]


async def test_ask_stream_sends_tokens_then_citations_route_usage_done(client, people):
    _, headers, _ = people["a"]
    chat = await _new_chat(client, headers)
    r = await client.post(
        f"/api/chats/{chat}/ask/stream",
        json={"question": "What does the supply boat Albatross bring to the lighthouse?"},
        headers=headers,
    )
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    events = sse_events(r.text)
    names = [name for name, _ in events]
    tokens = [data["text"] for name, data in events if name == "token"]
    assert len(tokens) > 2 and names == ["token"] * len(tokens) + [
        "citations",
        "route",
        "usage",
        "done",
    ]
    citations, route, usage, done = (data for _, data in events[len(tokens) :])
    saved = (await _messages(client, headers, chat))[-1]
    assert "".join(tokens) == saved["content"] == done["answer"]
    assert "paraffin" in saved["content"]
    chat_record = (await client.get(f"/api/chats/{chat}", headers=headers)).json()["chat"]
    assert chat_record["title"].startswith("What does the supply boat")  # named after it
    assert done == {
        "chat_id": chat,
        "message_id": saved["id"],
        "answer": saved["content"],
        "routing": saved["routing"],
    }
    assert citations["citations"] == saved["citations"] and citations["chunk_map"]
    assert set(cited_ids(saved["content"])) <= set(citations["chunk_map"])
    assert route == {
        "route": saved["route"],
        "model_used": saved["model_used"],
        "reason": "specific question",
        "routing": saved["routing"],
    }
    # why the route was taken, the search settings and how sure the answer is
    assert saved["routing"] == {
        "route": "hybrid",
        "reason": "specific question",
        "mode": "specific",
        "confidence": saved["routing"]["confidence"],
    }
    assert saved["routing"]["confidence"] in ("high", "medium")
    assert usage == {"tokens": saved["tokens_used"]} and usage["tokens"] > 0


async def test_ask_without_a_chat_starts_one(client, people):
    _, headers, _ = people["a"]
    r = await client.post("/api/ask", json={"question": GULLS}, headers=headers)
    assert r.status_code == 200, r.text
    first = r.json()["chat_id"]
    r = await client.post(
        "/api/ask/stream", json={"question": "What is your name?"}, headers=headers
    )
    events = sse_events(r.text)
    assert [n for n, _ in events][-4:] == ["citations", "route", "usage", "done"]
    second = events[-1][1]["chat_id"]
    assert "".join(d["text"] for n, d in events if n == "token") == events[-1][1]["answer"]
    assert events[-2][1] == {"tokens": 0} and events[-3][1]["route"] == "direct"
    assert events[-3][1]["routing"]["confidence"] == "n/a"
    assert events[-3][1]["reason"] == "name question: a fixed reply"
    chats = {c["id"]: c for c in (await client.get("/api/chats", headers=headers)).json()["chats"]}
    assert first != second and {first, second} <= set(chats)
    assert chats[first]["title"] == GULLS
    assert len(await _messages(client, headers, second)) == 2


async def test_book_id_narrows_the_question_to_a_readable_document(client, people):
    (_, headers_a, doc_a), (_, headers_b, doc_b) = people["a"], people["b"]
    r = await client.post(
        "/api/ask", json={"question": GULLS, "book_id": str(doc_a)}, headers=headers_a
    )
    assert r.status_code == 200 and "seventeen" in r.json()["answer"]
    for book in (str(doc_b), str(uuid.uuid4())):
        r = await client.post(
            "/api/ask", json={"question": GULLS, "book_id": book}, headers=headers_a
        )
        assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
    for bad in ({}, {"question": "   "}, {"question": 3}):
        r = await client.post("/api/ask", json=bad, headers=headers_b)
        assert r.status_code == 422 and r.json()["error"]["code"] == "invalid_request"


async def test_another_users_chats_and_corrections_answer_404(client, people):
    (_, headers_a, doc_a), (_, headers_b, _) = people["a"], people["b"]
    chat = await _new_chat(client, headers_a, title="private")
    asked = (
        await client.post(f"/api/chats/{chat}/ask", json={"question": GULLS}, headers=headers_a)
    ).json()
    correction = (
        await client.post(
            "/api/corrections",
            json={"message_id": asked["message_id"], "correction": "Count the gulls twice."},
            headers=headers_a,
        )
    ).json()["correction"]
    for method, path, body in (
        ("GET", f"/api/chats/{chat}", None),
        ("GET", f"/api/chats/{chat}/messages", None),
        ("POST", f"/api/chats/{chat}/ask", {"question": GULLS}),
        ("POST", f"/api/chats/{chat}/ask/stream", {"question": GULLS}),
        ("DELETE", f"/api/corrections/{correction['id']}", None),
        ("POST", "/api/corrections", {"message_id": asked["message_id"], "correction": "x"}),
        (
            "POST",
            "/api/corrections",
            {"question": "q", "correction": "x", "document_id": str(doc_a)},
        ),
        ("GET", "/api/chats/not-a-uuid", None),
    ):
        r = await client.request(method, path, json=body, headers=headers_b)
        assert r.status_code == 404, (method, path, r.status_code)
        assert r.json()["error"]["code"] == "not_found"
    chats_b = (await client.get("/api/chats", headers=headers_b)).json()["chats"]
    assert chat not in {c["id"] for c in chats_b}
    corrections_b = (await client.get("/api/corrections", headers=headers_b)).json()["corrections"]
    assert correction["id"] not in {c["id"] for c in corrections_b}
    # nothing was added to A's chat by B's attempts
    assert len(await _messages(client, headers_a, chat)) == 2


async def test_search_answers_in_the_seed_004_shape_within_the_users_scope(client, people):
    (_, headers_a, doc_a), (_, headers_b, doc_b) = people["a"], people["b"]
    r = await client.post(
        "/api/search", json={"query": "herring gulls lantern gallery", "k": 3}, headers=headers_a
    )
    assert r.status_code == 200, r.text
    found = r.json()
    assert set(found) == {"answerHints", "citations", "searchMetadata"}
    assert found["citations"] and {c["documentId"] for c in found["citations"]} == {str(doc_a)}
    assert set(cited_ids(found["answerHints"])) == {c["id"] for c in found["citations"]}
    assert found["searchMetadata"]["resultsFound"] == len(found["citations"])
    # B never gets A's chunks: not by query, not by naming A's document
    for body in (
        {"query": "herring gulls lantern gallery Marguerite"},
        {"query": "Marguerite", "document_ids": [str(doc_a)]},
        {"query": "Marguerite", "mode": "bm25"},
    ):
        r = await client.post("/api/search", json=body, headers=headers_b)
        assert r.status_code == 200
        assert str(doc_a) not in {c["documentId"] for c in r.json()["citations"]}
    r = await client.post(
        "/api/search", json={"query": "beehives", "corpus": "nowhere"}, headers=headers_b
    )
    assert r.json()["citations"] == []
    r = await client.post(
        "/api/search", json={"query": "honey", "document_ids": [str(doc_b)]}, headers=headers_b
    )
    assert {c["documentId"] for c in r.json()["citations"]} == {str(doc_b)}
    r = await client.post("/api/search", json={"query": " "}, headers=headers_b)
    assert r.status_code == 422


async def test_a_correction_shapes_its_owners_next_answer_only(client, services, people):
    (_, headers_a, _), (_, headers_b, _) = people["a"], people["b"]
    question = "What colour does Marguerite paint the lamp room each spring?"
    chat_a = await _new_chat(client, headers_a)
    first = (
        await client.post(
            f"/api/chats/{chat_a}/ask", json={"question": question}, headers=headers_a
        )
    ).json()
    note = "The lamp room is painted ultramarine, not cobalt blue."
    r = await client.post(
        "/api/corrections",
        json={"message_id": first["message_id"], "correction": note},
        headers=headers_a,
    )
    assert r.status_code == 201, r.text
    correction = r.json()["correction"]
    assert correction["message_id"] == first["message_id"] and correction["question"] == question
    assert correction["wrong_answer"] == first["answer"]
    listed = (await client.get("/api/corrections", headers=headers_a)).json()["corrections"]
    assert listed[0]["id"] == correction["id"]

    await client.post(f"/api/chats/{chat_a}/ask", json={"question": question}, headers=headers_a)
    assert "ultramarine" in (await _chat_state(services, chat_a))["corrections"]
    chat_b = await _new_chat(client, headers_b)
    await client.post(f"/api/chats/{chat_b}/ask", json={"question": question}, headers=headers_b)
    assert "ultramarine" not in (await _chat_state(services, chat_b)).get("corrections", "")

    r = await client.delete(f"/api/corrections/{correction['id']}", headers=headers_a)
    assert r.status_code == 204
    r = await client.delete(f"/api/corrections/{correction['id']}", headers=headers_a)
    assert r.status_code == 404
    await client.post(f"/api/chats/{chat_a}/ask", json={"question": question}, headers=headers_a)
    assert "ultramarine" not in (await _chat_state(services, chat_a))["corrections"]
    for bad in ({"correction": "no target"}, {"question": "q", "correction": " "}):
        r = await client.post("/api/corrections", json=bad, headers=headers_a)
        assert r.status_code in (400, 422)


async def test_usage_counts_exactly_the_turns_made(client, services):
    _, headers, _ = await _person(services, "api-usage", A_TEXT)
    usage = (await client.get("/api/usage", headers=headers)).json()["usage"]
    assert usage["chat_messages"] == 0 and usage["tokens"] == 0
    assert len(usage["month"]) == 7 and usage["monthly_limit"] is None
    one = (await client.post("/api/ask", json={"question": GULLS}, headers=headers)).json()
    r = await client.post(
        f"/api/chats/{one['chat_id']}/ask/stream", json={"question": GULLS}, headers=headers
    )
    streamed = dict(sse_events(r.text))
    usage = (await client.get("/api/usage", headers=headers)).json()["usage"]
    assert usage["chat_messages"] == 2
    assert usage["tokens"] == one["usage"]["tokens"] + streamed["usage"]["tokens"]


async def test_the_monthly_limit_refuses_clearly_and_saves_nothing(
    client, services, people, monkeypatch
):
    import api.answers

    _, headers, _ = await _person(services, "api-limit", A_TEXT)
    monkeypatch.setattr(services.settings, "monthly_message_limit", 1)
    chat = await _new_chat(client, headers)
    assert (
        await client.post(f"/api/chats/{chat}/ask", json={"question": GULLS}, headers=headers)
    ).status_code == 200
    chats_before = (await client.get("/api/chats", headers=headers)).json()["chats"]
    for path in (f"/api/chats/{chat}/ask", f"/api/chats/{chat}/ask/stream", "/api/ask"):
        r = await client.post(path, json={"question": GULLS}, headers=headers)
        assert r.status_code == 429, (path, r.text)
        error = r.json()["error"]
        assert error["code"] == "monthly_limit" and "limit of 1" in error["message"]
    # the limit reached between the check and the run: the graph refuses, the stream says so
    monkeypatch.setattr(api.answers, "over_monthly_limit", _never)
    r = await client.post(
        f"/api/chats/{chat}/ask/stream", json={"question": GULLS}, headers=headers
    )
    assert [name for name, _ in sse_events(r.text)] == ["error"]
    assert sse_events(r.text)[0][1]["code"] == "monthly_limit"
    r = await client.post("/api/ask", json={"question": GULLS}, headers=headers)
    assert r.status_code == 429
    assert len(await _messages(client, headers, chat)) == 2
    assert (await client.get("/api/chats", headers=headers)).json()["chats"] == chats_before
    usage = (await client.get("/api/usage", headers=headers)).json()["usage"]
    assert usage["chat_messages"] == 1 and usage["monthly_limit"] == 1


async def _never(services, user_id) -> bool:
    return False


async def test_a_model_failure_mid_answer_is_an_error_event_and_keeps_only_the_question(
    client, services, people, monkeypatch
):
    import agent.chat.cited_answer

    _, headers, _ = await _person(services, "api-fail", A_TEXT)
    chat = await _new_chat(client, headers)

    def broken(*args, **kwargs):
        raise RuntimeError("the model fell over")

    monkeypatch.setattr(agent.chat.cited_answer, "finish_grounded", broken)
    r = await client.post(
        f"/api/chats/{chat}/ask/stream", json={"question": GULLS}, headers=headers
    )
    events = sse_events(r.text)
    names = [name for name, _ in events]
    assert names[-1] == "error" and set(names[:-1]) == {"token"}  # the tokens had started
    assert events[-1][1]["code"] == "answer_failed"
    assert "fell over" not in events[-1][1]["message"]  # no internals
    r = await client.post("/api/ask", json={"question": GULLS}, headers=headers)
    assert r.status_code == 502 and r.json()["error"]["code"] == "answer_failed"
    [kept] = await _messages(client, headers, chat)  # the question, with its error
    assert kept["role"] == "user" and kept["error"]["code"] == "answer_failed"
    chats = (await client.get("/api/chats", headers=headers)).json()["chats"]
    assert len(chats) == 2  # the failed new chat keeps its question too
    usage = (await client.get("/api/usage", headers=headers)).json()["usage"]
    assert usage["chat_messages"] == 0 and usage["tokens"] == 0

    monkeypatch.undo()  # the model is back: the same chat answers normally
    r = await client.post(f"/api/chats/{chat}/ask", json={"question": GULLS}, headers=headers)
    assert r.status_code == 200 and "seventeen" in r.json()["answer"]
    assert [m["role"] for m in await _messages(client, headers, chat)] == [
        "user",
        "user",
        "assistant",
    ]
