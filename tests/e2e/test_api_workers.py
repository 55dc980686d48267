"""Two API worker processes (``uvicorn api.app:app``) on one database behave as one service.

Both run against the test session's database (the same URL this process uses), with
uploads over 4 KiB turned into jobs. What one worker writes, the other sees at once;
usage counts every turn whichever worker answered it; an ingest job accepted by one can be
followed to its end on the other; a delete on one is a 404 on the other.
"""

from __future__ import annotations

import asyncio
import time
import uuid

import httpx
import pytest
from sqlalchemy import text

from tests.support.programs import program_env, start_api, stop_process

pytestmark = pytest.mark.server

SYNC_INGEST_BYTES = 4096


@pytest.fixture(scope="module")
def workers(services, tmp_path_factory):
    """Two uvicorn workers on free loopback ports: ``[url_1, url_2]``."""
    env = program_env(
        DATABASE_URL=services.urls.libpq,  # the very database this test process uses
        QUIRE_DATABASE_NAME=services.settings.database_name,
        QUIRE_CHAT_MODEL="extractive",
        QUIRE_API_SYNC_INGEST_BYTES=str(SYNC_INGEST_BYTES),
    )
    env.pop("QUIRE_DATABASE_URL", None)  # it would win over DATABASE_URL
    logs = tmp_path_factory.mktemp("workers")
    procs, urls = [], []
    try:
        for n in (1, 2):
            proc, url = start_api(env, logs / f"worker{n}.log")
            procs.append(proc)
            urls.append(url)
        yield urls
    finally:
        for proc in procs:
            stop_process(proc)


@pytest.fixture
async def person(services):
    """A new user and the headers with their token."""
    from agent.library.accounts import add_user

    user, token = await add_user(services, f"workers-{uuid.uuid4().hex[:6]}")
    return user, {"Authorization": f"Bearer {token}"}


@pytest.fixture
async def clients(workers):
    """One HTTP client per worker."""
    async with (
        httpx.AsyncClient(base_url=workers[0], timeout=60) as one,
        httpx.AsyncClient(base_url=workers[1], timeout=60) as two,
    ):
        yield one, two


def note(words: int = 40) -> tuple[str, str]:
    """A short note with a word found nowhere else: ``(marker, text)``."""
    marker = f"quokka{uuid.uuid4().hex[:8]}"
    body = " ".join(
        f"The {marker} ferry crossed the harbour at dawn, trip {i}." for i in range(words // 10)
    )
    return marker, f"Harbour log {marker}\n\n{body}\n\nEvery {marker} passenger paid a penny.\n"


async def upload(client, headers, name: str, content: str) -> httpx.Response:
    return await client.post(
        "/api/documents", headers=headers, files={"file": (name, content.encode())}
    )


async def search(client, headers, query: str) -> dict:
    response = await client.post("/api/search", headers=headers, json={"query": query})
    assert response.status_code == 200, response.text
    return response.json()


def test_both_workers_are_up(workers):
    for url in workers:
        assert httpx.get(f"{url}/health").json()["status"] == "ok"


async def test_an_upload_on_one_worker_is_searchable_and_citable_on_the_other_at_once(
    clients, person
):
    one, two = clients
    _, headers = person
    marker, content = note()
    assert len(content.encode()) <= SYNC_INGEST_BYTES
    response = await upload(one, headers, "harbour.txt", content)
    assert response.status_code == 201, response.text
    doc_id = response.json()["document"]["id"]

    found, listed, shown = await asyncio.gather(
        search(two, headers, f"{marker} ferry"),
        two.get("/api/documents", headers=headers),
        two.get(f"/api/documents/{doc_id}", headers=headers),
    )
    assert shown.status_code == 200, shown.text
    assert doc_id in [d["id"] for d in listed.json()["documents"]]
    cited = [c for c in found["citations"] if c["documentId"] == doc_id]
    assert cited, found
    by_id, by_citation = await asyncio.gather(
        two.get(f"/api/chunks/{cited[0]['chunkId']}", headers=headers),
        two.get(f"/api/chunks/{cited[0]['id'].replace('#', '%23')}", headers=headers),
    )
    for response in (by_id, by_citation):
        assert response.status_code == 200, response.text
        chunk = response.json()["chunk"]
        assert chunk["id"] == cited[0]["chunkId"] and chunk["document_id"] == doc_id
        assert marker in chunk["text"]


async def test_usage_counts_every_turn_whichever_worker_answered(clients, person, services):
    one, two = clients
    user, headers = person
    marker, content = note()
    assert (await upload(one, headers, "ferry.txt", content)).status_code == 201
    question = {"question": f"What did every {marker} passenger pay?"}
    answers = await asyncio.gather(
        one.post("/api/ask", headers=headers, json=question),
        two.post("/api/ask", headers=headers, json=question),
    )
    for response in answers:
        assert response.status_code == 200, response.text
    tokens = sum(r.json()["usage"]["tokens"] for r in answers)
    assert len({r.json()["chat_id"] for r in answers}) == 2

    for client in (one, two):
        response = await client.get("/api/usage", headers=headers)
        assert response.status_code == 200, response.text
        usage = response.json()["usage"]
        assert usage["chat_messages"] == 2, usage
        assert usage["tokens"] == tokens, (usage, tokens)

    async with services.engine.connect() as conn:
        rows = (
            await conn.execute(
                text(
                    "SELECT role, count(*) AS n, coalesce(sum(tokens_used), 0) AS tokens "
                    "FROM chat_messages WHERE user_id = :u GROUP BY role"
                ),
                {"u": user.id},
            )
        ).all()
    by_role = {r.role: (r.n, r.tokens) for r in rows}
    assert by_role["user"][0] == 2, by_role
    assert by_role["assistant"] == (2, tokens), by_role
    assert {str(r.json()["message_id"]) for r in answers} <= await _assistant_ids(services, user.id)


async def _assistant_ids(services, user_id) -> set[str]:
    async with services.engine.connect() as conn:
        rows = await conn.execute(
            text("SELECT id FROM chat_messages WHERE user_id = :u AND role = 'assistant'"),
            {"u": user_id},
        )
        return {str(r.id) for r in rows}


async def test_a_delete_on_one_worker_is_gone_on_the_other(clients, person):
    one, two = clients
    _, headers = person
    marker, content = note()
    response = await upload(one, headers, "gone.txt", content)
    assert response.status_code == 201, response.text
    doc_id = response.json()["document"]["id"]
    assert [c for c in (await search(one, headers, marker))["citations"]]

    deleted = await two.delete(f"/api/documents/{doc_id}", headers=headers)
    assert deleted.status_code == 204, deleted.text

    found, shown, listed = await asyncio.gather(
        search(one, headers, f"{marker} ferry"),
        one.get(f"/api/documents/{doc_id}", headers=headers),
        one.get("/api/documents", headers=headers),
    )
    assert not [c for c in found["citations"] if c["documentId"] == doc_id], found
    assert shown.status_code == 404, shown.text
    assert shown.json()["error"]["code"] == "not_found"
    assert doc_id not in [d["id"] for d in listed.json()["documents"]]


async def test_a_job_accepted_by_one_worker_is_followed_to_done_on_the_other(clients, person):
    one, two = clients
    _, headers = person
    marker, content = note(words=1500)
    assert len(content.encode()) > SYNC_INGEST_BYTES
    response = await upload(one, headers, "long-log.txt", content)
    assert response.status_code == 202, response.text
    job = response.json()["job"]
    assert response.headers["location"] == f"/api/jobs/{job['id']}"
    assert job["kind"] == "upload" and job["status"] in ("queued", "running", "done")

    deadline = time.monotonic() + 45
    while job["status"] not in ("done", "failed"):
        assert time.monotonic() < deadline, f"job not done in 45 s: {job}"
        await asyncio.sleep(0.2)
        polled = await two.get(response.headers["location"], headers=headers)
        assert polled.status_code == 200, polled.text
        job = polled.json()["job"]
    assert job["status"] == "done", job
    assert job["error"] is None and job["document_id"]

    shown = await two.get(f"/api/documents/{job['document_id']}", headers=headers)
    assert shown.status_code == 200, shown.text
    found = await search(two, headers, f"{marker} ferry")
    assert [c for c in found["citations"] if c["documentId"] == job["document_id"]], found

    stranger = await two.get(response.headers["location"], headers={"Authorization": "Bearer x"})
    assert stranger.status_code == 401
