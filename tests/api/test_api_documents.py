"""The documents, jobs, chunks and sharing routes over HTTP (the real app, real Postgres)."""

from __future__ import annotations

import asyncio
import http.server
import os
import uuid
from urllib.parse import quote

import pytest
from sqlalchemy import text

from agent.db import jobs as job_store
from agent.db.keyword_sql import keyword_search
from agent.db.scope import SearchScope
from agent.ingest import jobs
from agent.library.accounts import add_user
from agent.refusals import Refused
from agent.retrieval.citations import citation_id
from agent.summaries.builder import summarize_document
from agent.summaries.writers import Summary
from api.uploads import read_upload
from tests.support.local_http import send_body, serving
from tests.support.paths import SHARED
from tests.support.samples import book_text

SAMPLES = SHARED / "data" / "docs" / "pdf-samples"
CREATURES = ["walrus", "carpenter", "gryphon", "dormouse", "caterpillar", "duchess"]


def note_text(words: int = 60) -> str:
    """A short unique note (never a duplicate of another test's)."""
    tag = uuid.uuid4().hex[:8]
    body = " ".join(f"marmalade{tag} lighthouse keeper number {i}." for i in range(words // 5))
    return f"Notes {tag}\n\n{body}\n\nThe keeper of {tag} counted every ship that passed.\n"


class FakeWriter:
    """An LLM-free summary writer."""

    name = "fake-writer"

    async def section(self, title: str, heading: str, text: str) -> Summary:
        return Summary(f"Section summary of {heading}.", ["oysters", "tides"])

    async def chapter(self, title: str, chapter: str, summaries: list[str]) -> Summary:
        return Summary(f"{chapter} combines {len(summaries)} sections.", ["tides"])

    async def book(self, title: str, author: str | None, summaries: str) -> str:
        return f"Executive summary of {title}."


@pytest.fixture
def person(services):
    """A new user and the headers carrying their token."""

    async def make(prefix: str = "api"):
        user, token = await add_user(services, f"{prefix}-{uuid.uuid4().hex[:6]}")
        return user, {"Authorization": f"Bearer {token}"}

    return make


async def upload(client, headers, name: str, data: bytes, **fields):
    return await client.post(
        "/api/documents", headers=headers, files={"file": (name, data)}, data=fields
    )


async def document_count(services, user_id) -> int:
    async with services.engine.connect() as conn:
        return (
            await conn.execute(
                text("SELECT count(*) FROM documents WHERE user_id = :u"), {"u": user_id}
            )
        ).scalar_one()


async def first_chunk(services, document_id) -> uuid.UUID:
    async with services.engine.connect() as conn:
        return (
            await conn.execute(
                text(
                    "SELECT id FROM child_chunks WHERE document_id = :d ORDER BY chunk_index LIMIT 1"
                ),
                {"d": document_id},
            )
        ).scalar_one()


async def wait_for_job(client, headers, job_id: str, seconds: float = 60) -> dict:
    for _ in range(int(seconds / 0.1)):
        response = await client.get(f"/api/jobs/{job_id}", headers=headers)
        assert response.status_code == 200, response.text
        job = response.json()["job"]
        if job["status"] in ("done", "failed"):
            return job
        await asyncio.sleep(0.1)
    raise AssertionError(f"job {job_id} did not finish: {job}")


def assert_error(response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == code and error["message"]


ROUTES = [
    ("POST", "/api/documents"),
    ("POST", "/api/documents/url"),
    ("POST", "/api/documents/text"),
    ("POST", "/api/transcripts"),
    ("GET", "/api/jobs/{id}"),
    ("GET", "/api/documents"),
    ("GET", "/api/documents/{id}"),
    ("DELETE", "/api/documents/{id}"),
    ("GET", "/api/chunks/{id}"),
    ("POST", "/api/documents/{id}/shares"),
    ("GET", "/api/documents/{id}/shares"),
    ("DELETE", "/api/documents/{id}/shares/someone"),
]


async def test_every_route_needs_a_valid_token(client):
    some_id = str(uuid.uuid4())
    for method, path in ROUTES:
        url = path.format(id=some_id)
        for headers in ({}, {"Authorization": "Bearer qk_not-a-token"}, {"Authorization": "x"}):
            response = await client.request(method, url, headers=headers, json={})
            assert_error(response, 401, "unauthorized")
            assert response.headers["www-authenticate"] == "Bearer"


async def test_small_upload_is_ingested_inline_and_listed(client, person):
    user, headers = await person()
    response = await upload(
        client, headers, "notes.txt", note_text().encode(), title="My notes", tags="Sea, ships"
    )
    assert response.status_code == 201, response.text
    doc = response.json()["document"]
    assert response.json()["status"] == "ingested"
    assert doc["title"] == "My notes" and doc["file_type"] == "txt"
    assert doc["tags"] == ["sea", "ships"] and doc["chunk_count"] >= 1
    assert doc["shared"] is False and doc["owner"] == user.name
    listed = (await client.get("/api/documents", headers=headers)).json()["documents"]
    assert [d["id"] for d in listed] == [doc["id"]]
    shown = (await client.get(f"/api/documents/{doc['id']}", headers=headers)).json()
    assert shown["document"] == doc and "table_of_contents" in shown["summaries"]


async def test_a_caption_file_is_uploaded_as_a_transcript_and_found(client, person):
    _, headers = await person()
    tag = uuid.uuid4().hex[:8]
    captions = (
        "WEBVTT\n\n1\n00:00:01.000 --> 00:00:04.000\n<v Dana>Welcome to the quarry"
        f" {tag} meeting.\n\n2\n00:00:04.500 --> 00:00:09.000\n<v Lee>The new crusher"
        " arrives on the ninth of May.\n"
    )
    response = await upload(client, headers, "quarry-call.vtt", captions.encode())
    assert response.status_code == 201, response.text
    doc = response.json()["document"]
    assert doc["file_type"] == "transcript" and doc["title"] == "quarry call"
    found = await client.post(
        "/api/search", json={"query": "When does the crusher arrive?", "k": 1}, headers=headers
    )
    assert found.status_code == 200, found.text
    [hit] = found.json()["citations"]
    assert hit["documentId"] == doc["id"]
    assert "Lee: The new crusher arrives on the ninth of May." in found.json()["answerHints"]
    assert "-->" not in found.json()["answerHints"]


async def test_a_windows_1252_article_is_ingested_with_its_encoding(client, person, services):
    user, headers = await person("latin")
    tag = uuid.uuid4().hex[:8]
    article = (
        f"Café {tag}\n\nThe “naïve” façade of café {tag} in Besançon was painted in 1998; "
        "its crêpes cost 3 € — or £2.\n"
    )
    response = await upload(client, headers, "cafe.txt", article.encode("cp1252"))
    assert response.status_code == 201, response.text
    doc = response.json()["document"]
    assert doc["encoding"] == "cp1252"
    shown = (await client.get(f"/api/documents/{doc['id']}", headers=headers)).json()
    assert shown["document"]["encoding"] == "cp1252"
    chunk = (
        await client.get(f"/api/chunks/{await first_chunk(services, doc['id'])}", headers=headers)
    ).json()["chunk"]
    assert "“naïve” façade" in chunk["text"] and "3 € — or £2" in chunk["text"]
    pdf = (SAMPLES / "001-trivial" / "minimal-document.pdf").read_bytes()
    response = await upload(client, headers, "minimal.pdf", pdf)
    assert response.status_code == 201 and response.json()["document"]["encoding"] is None


async def test_large_upload_becomes_a_job(client, person, services, monkeypatch):
    monkeypatch.setattr(services.settings, "api_sync_ingest_bytes", 100)
    user, headers = await person()
    data = note_text(200).encode()
    response = await upload(client, headers, "big.md", data, corpus="sea")
    assert response.status_code == 202, response.text
    job = response.json()["job"]
    assert response.headers["location"] == f"/api/jobs/{job['id']}"
    assert job["kind"] == "upload" and job["status"] in ("queued", "running")
    assert job["error"] is None and job["document_id"] is None
    done = await wait_for_job(client, headers, job["id"])
    assert done["status"] == "done", done
    assert done["stage"] == "store" and done["done"] == done["total"] == 1
    listed = (await client.get("/api/documents", headers=headers)).json()["documents"]
    assert [d["id"] for d in listed] == [done["document_id"]]
    async with services.engine.connect() as conn:
        payload = (
            await conn.execute(
                text("SELECT payload FROM ingest_jobs WHERE id = :j"), {"j": job["id"]}
            )
        ).scalar_one()
    assert payload is None  # the upload is not kept once ingested
    _, stranger = await person("stranger")
    assert_error(await client.get(f"/api/jobs/{job['id']}", headers=stranger), 404, "not_found")
    assert_error(await client.get("/api/jobs/not-a-uuid", headers=headers), 404, "not_found")
    # the same file again is a job that finds the stored document
    again = await upload(client, headers, "big.md", data)
    assert again.status_code == 202
    repeat = await wait_for_job(client, headers, again.json()["job"]["id"])
    assert repeat["status"] == "done" and repeat["document_id"] == done["document_id"]


async def test_upload_over_the_limit_is_413(client, person, services, monkeypatch):
    monkeypatch.setattr(services.settings, "api_max_upload_bytes", 1000)
    user, headers = await person()
    assert_error(await upload(client, headers, "big.txt", b"word " * 400), 413, "too_large")
    assert (await upload(client, headers, "ok.txt", note_text(20).encode())).status_code == 201
    assert await document_count(services, user.id) == 1


async def test_upload_reading_stops_at_the_first_byte_too_many():
    form = "multipart/form-data; boundary=xyz"
    sent = 0

    async def endless(filename: str):
        nonlocal sent
        yield (
            b'--xyz\r\nContent-Disposition: form-data; name="file"; filename="'
            + filename.encode()
            + b'"\r\n\r\n'
        )
        while True:
            sent += 1024
            yield b"a" * 1024

    with pytest.raises(Refused) as refused:
        await read_upload(form, None, endless("big.txt"), max_bytes=10_000)
    assert refused.value.code == "too_large" and sent <= 11 * 1024
    sent = 0
    with pytest.raises(Refused) as refused:
        await read_upload(form, None, endless("tool.exe"), max_bytes=10_000)
    assert refused.value.code == "unsupported_type" and sent == 0
    sent = 0
    with pytest.raises(Refused) as refused:  # the declared length alone is enough
        await read_upload(form, str(10**9), endless("big.txt"), max_bytes=10_000)
    assert refused.value.code == "too_large" and sent == 0


async def test_refused_uploads_leave_no_document(client, person, services):
    user, headers = await person()
    assert_error(
        await upload(client, headers, "tool.exe", b"MZ\x90\x00" * 50), 415, "unsupported_type"
    )
    assert_error(await upload(client, headers, "empty.txt", b""), 400, "empty")
    assert_error(await upload(client, headers, "blank.md", b"  \n\n "), 400, "empty")
    assert_error(await upload(client, headers, "paper.pdf", os.urandom(4000)), 400, "unreadable")
    no_form = await client.post("/api/documents", headers=headers, json={"file": "x"})
    assert_error(no_form, 400, "invalid_source")
    no_file = await client.post("/api/documents", headers=headers, files={"other": ("a.txt", b"a")})
    assert_error(no_file, 400, "invalid_source")
    assert await document_count(services, user.id) == 0


async def test_private_urls_are_refused_before_any_fetch(client, person, services):
    user, headers = await person()
    for url in (
        "http://127.0.0.1/secret",
        "http://10.1.2.3/",
        "http://[::1]/",
        "file:///etc/passwd",
    ):
        response = await client.post("/api/documents/url", headers=headers, json={"url": url})
        assert_error(response, 400, "unsafe_url")
    async with services.engine.connect() as conn:
        count = (
            await conn.execute(
                text("SELECT count(*) FROM ingest_jobs WHERE user_id = :u"), {"u": user.id}
            )
        ).scalar_one()
    assert count == 0


async def test_url_ingestion_runs_as_a_job(client, person, services, monkeypatch):
    monkeypatch.setattr(services.settings, "allow_private_urls", True)
    page = note_text().encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            status, body = (200, page) if self.path == "/notes.txt" else (404, b"gone")
            send_body(self, status, body, "text/plain")

        def log_message(self, *args):
            pass

    with serving(Handler) as base:
        user, headers = await person()
        response = await client.post(
            "/api/documents/url",
            headers=headers,
            json={"url": f"{base}/notes.txt", "title": "Fetched", "tags": ["web"]},
        )
        assert response.status_code == 202, response.text
        job = await wait_for_job(client, headers, response.json()["job"]["id"])
        assert job["kind"] == "url" and job["status"] == "done", job
        doc = (await client.get(f"/api/documents/{job['document_id']}", headers=headers)).json()
        assert doc["document"]["title"] == "Fetched" and doc["document"]["tags"] == ["web"]
        missing = await client.post(
            "/api/documents/url", headers=headers, json={"url": f"{base}/missing.txt"}
        )
        failed = await wait_for_job(client, headers, missing.json()["job"]["id"])
        assert failed["status"] == "failed" and failed["error"]["code"] == "fetch_failed"
        assert failed["document_id"] is None


async def test_text_and_transcript_routes(client, person, services):
    user, headers = await person()
    response = await client.post(
        "/api/documents/text",
        headers=headers,
        json={"title": "Pasted", "text": note_text(), "tags": "a, b"},
    )
    assert response.status_code == 201, response.text
    assert response.json()["document"]["title"] == "Pasted"
    assert response.json()["document"]["tags"] == ["a", "b"]
    empty = await client.post(
        "/api/documents/text", headers=headers, json={"title": "x", "text": " "}
    )
    assert_error(empty, 400, "empty")
    no_title = await client.post("/api/documents/text", headers=headers, json={"text": "words"})
    assert_error(no_title, 422, "invalid_request")
    transcript = await client.post(
        "/api/transcripts",
        headers=headers,
        json={"text": note_text(), "tags": ["standup"], "echotag": "team"},
    )
    assert transcript.status_code == 201, transcript.text
    doc = transcript.json()["document"]
    assert doc["file_type"] == "transcript" and doc["tags"] == ["standup"]
    assert doc["title"].startswith("Transcript ")
    assert_error(
        await client.post("/api/transcripts", headers=headers, json={"text": ""}), 400, "empty"
    )
    assert await document_count(services, user.id) == 2


async def test_show_document_and_chunk_view_with_summaries(client, person, services):
    user, headers = await person()
    response = await upload(client, headers, "tale.txt", book_text().encode(), title="The Tale")
    assert response.status_code == 201, response.text
    doc_id = response.json()["document"]["id"]
    assert response.json()["document"]["summary_status"] == "pending"
    await summarize_document(services, uuid.UUID(doc_id), writer=FakeWriter())
    shown = (await client.get(f"/api/documents/{doc_id}", headers=headers)).json()
    assert shown["document"]["summary_status"] == "done"
    summaries = shown["summaries"]
    assert summaries["global_summary"].startswith("Executive summary")
    assert summaries["model"] == "fake-writer" and summaries["chapters"]
    assert "tides" in summaries["table_of_contents"]["topics"]

    chunk_id = await first_chunk(services, doc_id)
    by_id = await client.get(f"/api/chunks/{chunk_id}", headers=headers)
    assert by_id.status_code == 200, by_id.text
    chunk = by_id.json()["chunk"]
    assert chunk["citation_id"] == citation_id(chunk_id)
    assert chunk["document_id"] == doc_id and chunk["document_title"] == "The Tale"
    assert chunk["topic_labels"] == ["oysters", "tides"]
    assert chunk["summary"].startswith("Section summary of")
    assert chunk["text"] in chunk["parent_text"] and chunk["preview"] == chunk["text"][:200]
    for ref in (citation_id(chunk_id), citation_id(chunk_id)[1:], citation_id(chunk_id).upper()):
        same = await client.get(f"/api/chunks/{quote(ref)}", headers=headers)
        assert same.status_code == 200 and same.json()["chunk"] == chunk, ref
    for ref in ("chk_00000000", "nonsense", str(uuid.uuid4())):
        assert_error(await client.get(f"/api/chunks/{ref}", headers=headers), 404, "not_found")


async def test_delete_then_everything_is_gone(client, person, services):
    user, headers = await person()
    doc_id = (await upload(client, headers, "n.txt", note_text().encode())).json()["document"]["id"]
    chunk_id = await first_chunk(services, doc_id)
    _, stranger = await person("stranger")
    assert_error(
        await client.delete(f"/api/documents/{doc_id}", headers=stranger), 404, "not_found"
    )
    assert_error(await client.get(f"/api/documents/{doc_id}", headers=stranger), 404, "not_found")
    assert_error(await client.get(f"/api/chunks/{chunk_id}", headers=stranger), 404, "not_found")
    shares = await client.get(f"/api/documents/{doc_id}/shares", headers=stranger)
    assert_error(shares, 404, "not_found")
    assert (await client.get("/api/documents", headers=stranger)).json()["documents"] == []

    response = await client.delete(f"/api/documents/{doc_id}", headers=headers)
    assert response.status_code == 204 and response.content == b""
    assert_error(await client.get(f"/api/documents/{doc_id}", headers=headers), 404, "not_found")
    assert_error(await client.delete(f"/api/documents/{doc_id}", headers=headers), 404, "not_found")
    assert_error(await client.get(f"/api/chunks/{chunk_id}", headers=headers), 404, "not_found")
    assert_error(await client.get("/api/documents/not-a-uuid", headers=headers), 404, "not_found")


async def test_sharing_is_read_only_and_revocable(client, person, services):
    owner, owner_h = await person("owner")
    grantee, grantee_h = await person("grantee")
    doc = (await upload(client, owner_h, "shared.txt", note_text().encode())).json()["document"]
    doc_id, chunk_id = doc["id"], await first_chunk(services, doc["id"])
    shares_url = f"/api/documents/{doc_id}/shares"

    unknown = await client.post(shares_url, headers=owner_h, json={"user": "nobody-" + doc_id})
    assert_error(unknown, 404, "unknown_user")
    assert_error(
        await client.post(shares_url, headers=owner_h, json={"user": owner.name}), 400, "self_share"
    )
    response = await client.post(shares_url, headers=owner_h, json={"user": grantee.name})
    assert response.status_code == 201, response.text
    assert response.json()["share"] | {"granted_at": None} == {
        "document_id": doc_id,
        "user": grantee.name,
        "is_visible": True,
        "granted_at": None,
    }
    listed = (await client.get(shares_url, headers=owner_h)).json()["shares"]
    assert [s["user"] for s in listed] == [grantee.name]

    seen = (await client.get("/api/documents", headers=grantee_h)).json()["documents"]
    assert [(d["id"], d["shared"], d["owner"]) for d in seen] == [(doc_id, True, owner.name)]
    assert (await client.get(f"/api/documents/{doc_id}", headers=grantee_h)).status_code == 200
    chunk = await client.get(f"/api/chunks/{quote(citation_id(chunk_id))}", headers=grantee_h)
    assert chunk.status_code == 200 and chunk.json()["chunk"]["id"] == str(chunk_id)
    # read-only for the grantee: delete and share answer as if it did not exist
    assert_error(
        await client.delete(f"/api/documents/{doc_id}", headers=grantee_h), 404, "not_found"
    )
    third, _ = await person("third")
    reshare = await client.post(shares_url, headers=grantee_h, json={"user": third.name})
    assert_error(reshare, 404, "not_found")
    assert_error(await client.get(shares_url, headers=grantee_h), 404, "not_found")
    revoke_by_grantee = await client.delete(f"{shares_url}/{grantee.name}", headers=grantee_h)
    assert_error(revoke_by_grantee, 404, "not_found")
    scope = SearchScope(grantee.id)
    async with services.engine.connect() as conn:
        assert await keyword_search(conn, scope, "lighthouse keeper", 5)

    response = await client.delete(f"{shares_url}/{grantee.name}", headers=owner_h)
    assert response.status_code == 204
    assert (await client.get(shares_url, headers=owner_h)).json()["shares"] == []
    assert (await client.get("/api/documents", headers=grantee_h)).json()["documents"] == []
    assert_error(await client.get(f"/api/chunks/{chunk_id}", headers=grantee_h), 404, "not_found")
    assert_error(await client.get(f"/api/documents/{doc_id}", headers=grantee_h), 404, "not_found")
    async with services.engine.connect() as conn:
        assert await keyword_search(conn, scope, "lighthouse keeper", 5) == []
    assert_error(
        await client.delete(f"{shares_url}/{grantee.name}", headers=owner_h), 404, "not_found"
    )
    # sharing again restores access
    assert (
        await client.post(shares_url, headers=owner_h, json={"user": grantee.name})
    ).status_code == 201
    assert (await client.get(f"/api/chunks/{chunk_id}", headers=grantee_h)).status_code == 200


async def test_jobs_left_by_a_dead_process_are_recovered(client, person, services):
    user, headers = await person()
    request = {"filename": "left.txt", "title": None, "tags": [], "corpus": "default"}
    async with services.engine.begin() as conn:
        queued = await job_store.create_job(conn, user.id, "upload", request, note_text().encode())
        running = await job_store.create_job(conn, user.id, "upload", request, note_text().encode())
        tried = await job_store.create_job(conn, user.id, "upload", request, b"never run")
        await conn.execute(
            text(
                "UPDATE ingest_jobs SET status = 'running', attempts = CASE WHEN id = :t "
                "THEN 2 ELSE 1 END, updated_at = now() - interval '1 hour' WHERE id IN (:r, :t)"
            ),
            {"r": running.id, "t": tried.id},
        )
    assert await jobs.recover_ingest_jobs(services) >= 2
    for job in (queued, running):
        done = await wait_for_job(client, headers, str(job.id))
        assert done["status"] == "done" and done["document_id"], done
    failed = (await client.get(f"/api/jobs/{tried.id}", headers=headers)).json()["job"]
    assert failed["status"] == "failed" and failed["error"]["code"] == "interrupted"

    # a stale running job is also picked up when someone asks for it
    async with services.engine.begin() as conn:
        stale = await job_store.create_job(conn, user.id, "upload", request, note_text().encode())
        await conn.execute(
            text(
                "UPDATE ingest_jobs SET status = 'running', attempts = 1, "
                "updated_at = now() - interval '1 hour' WHERE id = :j"
            ),
            {"j": stale.id},
        )
    done = await wait_for_job(client, headers, str(stale.id))
    assert done["status"] == "done", done
    # and so is a queued job no process is running
    async with services.engine.begin() as conn:
        orphan = await job_store.create_job(conn, user.id, "upload", request, note_text().encode())
    assert (await wait_for_job(client, headers, str(orphan.id)))["status"] == "done"
