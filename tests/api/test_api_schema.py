"""Property-based run of the HTTP API against its own OpenAPI schema (schemathesis).

Schemathesis generates requests for every operation the app publishes at /openapi.json,
valid ones (positive) and ones that break the schema (negative). They are sent in-process
to the real app (real Postgres, the extractive chat model) as a real user, and again
without or with a bad token. No response may be a 5xx, and every error answers in the
contract's one shape, ``{"error": {"code": ..., "message": ...}}``.

The requests go through ``httpx.ASGITransport`` on the test session's event loop rather
than ``case.call()``: schemathesis' own ASGI client runs the app on another event loop in a
thread, while the app's process-wide services (the engine's pool, the checkpointer) belong
to the loop they were opened on. Operations with a path parameter run with valid data only
(schemathesis finds no negative case for a plain string); half of their examples get the
ids of real objects of the user's. ``QUIRE_SCHEMA_EXAMPLES`` (default 15 per operation
and mode) makes a longer hunt.
"""

from __future__ import annotations

import collections
import json
import os
import uuid

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode

from api.app import app

SCHEMA = schemathesis.openapi.from_dict(app.openapi())  # what /openapi.json serves
OPERATIONS = {
    f"{op.method.upper()} {op.path}": op
    for op in (result.ok() for result in SCHEMA.get_all_operations())
}
EXCLUDED: dict[str, str] = {}
"""Operations left out of the run, with the reason (none: every route finishes quickly
with the extractive model, the SSE routes included)."""

KEEP_REAL_ID = {"DELETE /api/documents/{document_id}"}
"""Operations never given the shared document's real id (it would be gone for the rest)."""

EXAMPLES = settings(
    max_examples=int(os.environ.get("QUIRE_SCHEMA_EXAMPLES", "15")),  # more: a longer hunt
    deadline=None,
    database=None,  # keep no failing examples between runs
    suppress_health_check=list(HealthCheck),
)

SENT: collections.Counter = collections.Counter()
"""Requests sent, by ``(who, status)``: the summary test reports the total."""


@pytest.fixture(scope="module")
async def client(services):
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://test", timeout=120) as c:
        yield c
    from graphs.checkpoint import close_checkpointer

    await close_checkpointer()


@pytest.fixture(scope="module")
async def world(services, client):
    """A user with a token and real objects, so some generated requests reach deep paths."""
    from agent.library.accounts import add_user
    from agent.retrieval.citations import citation_id

    user, token = await add_user(services, f"schema-{uuid.uuid4().hex[:6]}")
    other, _ = await add_user(services, f"schema-friend-{uuid.uuid4().hex[:6]}")
    headers = {"Authorization": f"Bearer {token}"}

    async def ok(method: str, url: str, **kwargs) -> dict:
        response = await client.request(method, url, headers=headers, **kwargs)
        assert response.status_code < 300, response.text
        return response.json()

    text = (
        "The lighthouse keeper Marguerite feeds seventeen herring gulls every dawn. "
        "She paints the lamp room cobalt blue each spring.\n\n"
        "The supply boat Albatross brings paraffin and letters on Thursdays."
    )
    document = (await ok("POST", "/api/documents/text", json={"title": "Gulls", "text": text}))[
        "document"
    ]
    chat = (await ok("POST", "/api/chats", json={"title": "schema"}))["chat"]
    answer = await ok("POST", f"/api/chats/{chat['id']}/ask", json={"question": "How many gulls?"})
    correction = (
        await ok(
            "POST",
            "/api/corrections",
            json={"message_id": answer["message_id"], "correction": "Seventeen gulls."},
        )
    )["correction"]
    await ok("POST", f"/api/documents/{document['id']}/shares", json={"user": other.name})
    found = await ok("POST", "/api/search", json={"query": "herring gulls"})
    cited = found["citations"][0]
    chunk_id = cited["chunkId"]
    refs = [chunk_id, citation_id(chunk_id), citation_id(chunk_id).lstrip("#")]
    return {
        "headers": headers,
        "real": {
            "document_id": [document["id"]],
            "chat_id": [chat["id"], answer["chat_id"]],
            "correction_id": [correction["id"]],
            "ref": refs,
            "user_name": [other.name],
        },
    }


def _content(value) -> bytes | str:
    return value if isinstance(value, (bytes, str)) else json.dumps(value).encode()


def _file_value(value):
    """A multipart part for httpx: negative cases may hold any JSON value as the content."""
    if isinstance(value, tuple):
        return (value[0], _content(value[1]), *value[2:])
    return _content(value)


def _httpx_kwargs(kwargs: dict, auth: dict) -> dict:
    """Schemathesis' request (``requests`` keywords) as ``httpx`` keywords, with the
    generated ``Authorization`` header (the schema declares one) replaced by ``auth``'s."""
    out = {"method": kwargs["method"], "url": kwargs["url"]}
    headers = kwargs.get("headers") or {}
    out["headers"] = {
        k: v for k, v in headers.items() if v is not None and k.lower() != "authorization"
    } | auth
    if kwargs.get("params"):
        out["params"] = kwargs["params"]
    if "json" in kwargs:
        out["json"] = kwargs["json"]
    data = kwargs.get("data")
    if kwargs.get("files"):
        out["files"] = [(name, _file_value(value)) for name, value in kwargs["files"]]
        if isinstance(data, dict):
            out["data"] = data
    elif isinstance(data, dict):
        out["data"] = data
    elif isinstance(data, (bytes, str)):
        out["content"] = data
    return out


async def _send(client: httpx.AsyncClient, case, headers: dict, who: str) -> httpx.Response:
    try:
        request = client.build_request(
            **_httpx_kwargs(case.as_transport_kwargs(base_url="http://test"), headers)
        )
    except (UnicodeError, ValueError, TypeError, httpx.HTTPError):
        assume(False)  # not sendable over HTTP at all (e.g. a header no client could encode)
    response = await client.send(request)
    SENT[(who, response.status_code)] += 1
    return response


def _check(response: httpx.Response, label: str) -> None:
    detail = f"{label} -> {response.status_code}: {response.text[:500]}"
    assert response.status_code < 500, detail
    assert "Traceback" not in response.text, detail
    if response.status_code >= 400:
        body = response.json()
        assert set(body) == {"error"}, detail
        error = body["error"]
        assert set(error) == {"code", "message"}, detail
        assert isinstance(error["code"], str) and error["code"], detail
        assert isinstance(error["message"], str) and error["message"], detail


RUN = sorted(label for label in OPERATIONS if label not in EXCLUDED)
RUN_MODES = [
    pytest.param(label, mode, id=f"{label}-{mode.value}")
    for label in RUN
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
    # schemathesis finds no negative case for an operation with a path parameter (a plain
    # string: nothing breaks its schema) or with no parameters at all (/health)
    if mode is GenerationMode.POSITIVE or ("{" not in label and " /api/" in label)
]


@pytest.mark.parametrize(("label", "mode"), RUN_MODES)
@EXAMPLES
@given(data=st.data())
async def test_authenticated_requests_never_fail(client, world, label, mode, data):
    case = data.draw(OPERATIONS[label].as_strategy(generation_mode=mode), label="case")
    if case.path_parameters and label not in KEEP_REAL_ID and data.draw(st.booleans()):
        for name in case.path_parameters:
            if name in world["real"]:
                case.path_parameters[name] = data.draw(st.sampled_from(world["real"][name]))
    response = await _send(client, case, world["headers"], "user")
    _check(response, label)


BAD_AUTH = [None, "Bearer not-a-token", "Basic dXNlcjpwYXNz", "Bearer ", "bearer"]


@pytest.mark.parametrize("label", RUN)
@settings(EXAMPLES, max_examples=max(5, EXAMPLES.max_examples // 3))
@given(data=st.data())
async def test_requests_without_a_valid_token_are_refused(client, services, label, data):
    case = data.draw(OPERATIONS[label].as_strategy(), label="case")
    auth = data.draw(st.sampled_from(BAD_AUTH), label="authorization")
    headers = {} if auth is None else {"Authorization": auth}
    response = await _send(client, case, headers, "anonymous")
    _check(response, label)
    if label.endswith(" /health"):
        assert response.status_code == 200
    else:
        assert response.status_code == 401, f"{label} -> {response.status_code}"
        assert response.json()["error"]["code"] == "unauthorized"


NUL = "nul\x00here"
NUL_BODIES = [
    ("/api/documents/text", {"title": NUL, "text": "some text"}),
    ("/api/documents/text", {"title": "t", "text": "some text", "tags": [NUL]}),
    ("/api/transcripts", {"text": NUL}),
    ("/api/search", {"query": "gulls", "corpus": NUL}),
    ("/api/chats", {"persona": NUL}),
    ("/api/ask", {"question": NUL}),
    ("/api/corrections", {"question": "q", "correction": NUL}),
    ("/api/search", {"query": "x\ud800y"}),  # a lone surrogate: not storable either
]


@pytest.mark.parametrize(("path", "body"), NUL_BODIES)
async def test_text_postgres_cannot_store_is_refused_not_a_500(client, world, path, body):
    """Found by the run above: NUL in any JSON text field (and in the upload form's fields)
    reached Postgres and failed with a 500 (502 for a question)."""
    response = await client.post(
        path,
        content=json.dumps(body).encode(),
        headers={**world["headers"], "Content-Type": "application/json"},
    )
    assert response.status_code == 422, response.text
    assert response.json()["error"]["code"] == "invalid_request"


async def test_nul_in_upload_fields_and_names_is_refused_and_in_text_files_dropped(client, world):
    headers = world["headers"]
    form = await client.post(
        "/api/documents", headers=headers, files={"file": ("a.txt", b"hi")}, data={"tags": NUL}
    )
    assert form.status_code == 422, form.text
    assert form.json()["error"]["code"] == "invalid_request"
    document = world["real"]["document_id"][0]
    revoke = await client.delete(f"/api/documents/{document}/shares/a%00b", headers=headers)
    assert revoke.status_code == 404, revoke.text
    upload = await client.post(
        "/api/documents",
        headers=headers,
        files={"file": ("nul.md", b"# Nul\n\nzebra\x00 crossing")},
    )
    assert upload.status_code == 201, upload.text


def test_requests_were_generated():
    """Runs last in this module: at least one request per operation was sent."""
    if not SENT:
        pytest.skip("the generated tests did not run (deselected)")
    total = sum(SENT.values())
    by_status = collections.Counter()
    for (_, status), n in SENT.items():
        by_status[status] += n
    print(
        f"\nschemathesis: {total} requests over {len(RUN)} operations: {dict(sorted(SENT.items()))}"
    )
    assert all(status < 500 for status in by_status)
    assert total >= len(RUN)
