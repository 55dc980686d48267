"""Hostile files and requests against the real upload routes, ``ingest_bytes`` and real Postgres.

Every hostile file is generated here (bombs written streamed to ``tmp_path``; nothing large is
committed). Each case must end in a clear 4xx with the contract's error shape (or a job that
fails with the same code), the app must still answer ``/health`` afterwards, and the user must
have exactly the documents, child chunks and keyword postings they had before: no partial
document. The bombs run under a bound on the test process's peak RSS growth (the app runs in
this process through ``httpx.ASGITransport``).
"""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import io
import json
import os
import resource
import time
import uuid
import zipfile
from pathlib import Path

import docx
import httpx
import pytest
from pypdf import PdfWriter
from sqlalchemy import text

from agent.ingest import fetch
from agent.ingest.document import DocumentTooLarge, UnreadableDocument
from agent.ingest.intake import ingest_upload
from agent.ingest.pipeline import ingest_bytes
from agent.library.accounts import add_user
from agent.refusals import refusal_for
from api.app import app
from tests.support.local_http import serving
from tests.support.paths import SHARED

FOUR_PAGES = (
    SHARED / "data" / "docs" / "pdf-samples" / "004-pdflatex-4-pages" / "pdflatex-4-pages.pdf"
)
TRIVIAL = SHARED / "data" / "docs" / "pdf-samples" / "001-trivial" / "minimal-document.pdf"
MIB = 1024 * 1024
PNG_HEADER = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
MEMORY_BOUND_MIB = 500


@pytest.fixture
async def client(services):
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://test", timeout=120
    ) as c:
        yield c


@pytest.fixture
async def person(services):
    """A fresh user and the headers carrying their token."""
    user, token = await add_user(services, f"hostile-{uuid.uuid4().hex[:6]}")
    return user, {"Authorization": f"Bearer {token}"}


@pytest.fixture
def inline(services, monkeypatch):
    """Uploads up to 16 MiB are ingested inline, so a refusal is the upload's own response."""
    monkeypatch.setattr(services.settings, "api_sync_ingest_bytes", 16 * MIB)


# --- generated hostile files --------------------------------------------------------------------


def _pdf_bytes(writer: PdfWriter) -> bytes:
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def truncated_pdf() -> bytes:
    data = FOUR_PAGES.read_bytes()
    return data[: len(data) // 2]


def encrypted_pdf() -> bytes:
    writer = PdfWriter(clone_from=TRIVIAL)
    writer.encrypt(user_password="secret", owner_password="owner", algorithm="AES-256")
    return _pdf_bytes(writer)


def pdf_bomb(pages: int = 5000) -> bytes:
    """Thousands of tiny blank pages (about 600 KB for 5,000)."""
    writer = PdfWriter()
    for _ in range(pages):
        writer.add_blank_page(72, 72)
    return _pdf_bytes(writer)


def deep_html(depth: int = 100_000) -> bytes:
    return (
        "<html><body>" + "<div>" * depth + "deep" + "</div>" * depth + "</body></html>"
    ).encode()


@pytest.fixture(scope="module")
def zip_bomb(tmp_path_factory) -> bytes:
    """An Office-looking zip with one member of 1 GiB of zeros, deflated (about 1 MB).

    Written streamed to a file, so the gigabyte never exists in memory.
    """
    path = tmp_path_factory.mktemp("bombs") / "bomb.zip"
    chunk = bytes(MIB)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        with archive.open("word/document.xml", "w", force_zip64=True) as member:
            for _ in range(1024):
                member.write(chunk)
    data = path.read_bytes()
    assert len(data) < 2 * MIB
    assert sum(i.file_size for i in zipfile.ZipFile(io.BytesIO(data)).infolist()) > 1024 * MIB
    return data


def small_docx(paragraphs: int = 3) -> bytes:
    document = docx.Document()
    for i in range(paragraphs):
        document.add_paragraph(f"Paragraph {i} about harbour lights {uuid.uuid4().hex}.")
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def note(tag: str | None = None) -> bytes:
    tag = tag or uuid.uuid4().hex[:8]
    body = " ".join(f"The lighthouse {tag} keeper logged ship number {i}." for i in range(12))
    return f"Log {tag}\n\n{body}\n".encode()


# --- helpers ------------------------------------------------------------------------------------


async def footprint(services, user_id) -> tuple[int, int, int]:
    """The user's documents, child chunks and keyword postings."""
    async with services.engine.connect() as conn:
        row = (
            await conn.execute(
                text(
                    "SELECT (SELECT count(*) FROM documents WHERE user_id = :u),"
                    " (SELECT count(*) FROM child_chunks c JOIN documents d"
                    "  ON d.id = c.document_id WHERE d.user_id = :u),"
                    " (SELECT count(*) FROM keyword_postings WHERE user_id = :u)"
                ),
                {"u": user_id},
            )
        ).one()
    return tuple(row)


async def assert_alive(client) -> None:
    response = await client.get("/health")
    assert response.status_code == 200 and response.json()["status"] == "ok"


def assert_error(response, status: int, code: str, match: str = "") -> str:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"code", "message"}
    assert error["code"] == code and error["message"], error
    assert "Traceback" not in error["message"]
    assert match.lower() in error["message"].lower(), error["message"]
    return error["message"]


async def upload(client, headers, name: str, data: bytes, **fields):
    return await client.post(
        "/api/documents", headers=headers, files={"file": (name, data)}, data=fields
    )


async def wait_for_job(client, headers, job_id: str, seconds: float = 60) -> dict:
    for _ in range(int(seconds / 0.1)):
        response = await client.get(f"/api/jobs/{job_id}", headers=headers)
        assert response.status_code == 200, response.text
        job = response.json()["job"]
        if job["status"] in ("done", "failed"):
            return job
        await asyncio.sleep(0.1)
    raise AssertionError(f"job {job_id} did not finish")


def rss_mib() -> float:
    """The process's resident memory now (Linux), else its peak so far."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / MIB
    except (OSError, ValueError, IndexError):
        return peak_rss_mib()


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def reset_peak_rss() -> None:
    """Restart the peak RSS from the current RSS (Linux); where that is not allowed the peak
    stays the whole run's, and the growth measured against the current RSS is overstated."""
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


# --- hostile files through the upload route -------------------------------------------------------

FILES = [
    ("empty.txt", lambda: b"", 400, "empty", "empty"),
    ("blank.md", lambda: b" \n\t\n  ", 400, "empty", "empty"),
    ("truncated.pdf", truncated_pdf, 400, "unreadable", "could not be read"),
    ("random.pdf", lambda: os.urandom(64 * 1024), 400, "unreadable", "could not be read"),
    ("locked.pdf", encrypted_pdf, 400, "unreadable", "encrypted with a password"),
    ("bomb.pdf", pdf_bomb, 413, "too_large", "5,000 pages, more than the limit of 2,000"),
    ("deep.html", deep_html, 400, "unreadable", "nested too deeply"),
    ("random.txt", lambda: os.urandom(64 * 1024), 400, "unreadable", "binary data, not text"),
    ("image.md", lambda: PNG_HEADER + os.urandom(8 * 1024), 400, "unreadable", "binary data"),
    ("nul.md", lambda: b"\x00" * 4096, 400, "unreadable", "binary data"),
    (
        "scripts.html",
        lambda: b"<html><script>x()</script><nav>m</nav></html>",
        400,
        "unreadable",
        "",
    ),
    ("pdf-named.docx", lambda: FOUR_PAGES.read_bytes(), 400, "unreadable", "not a valid zip"),
    (
        "legacy.pptx",
        lambda: b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(512),
        400,
        "unreadable",
        "",
    ),
    ("tool.exe", lambda: b"MZ\x90\x00" * 64, 415, "unsupported_type", "unsupported file type"),
    ("noext", lambda: b"hello", 415, "unsupported_type", ""),
]


@pytest.mark.parametrize(
    ("name", "make", "status", "code", "match"), FILES, ids=[f[0] for f in FILES]
)
async def test_hostile_file_is_refused_cleanly(
    client, services, person, inline, name, make, status, code, match
):
    user, headers = person
    before = await footprint(services, user.id)
    response = await upload(client, headers, name, make())
    assert_error(response, status, code, match)
    await assert_alive(client)
    assert await footprint(services, user.id) == before == (0, 0, 0)


@pytest.mark.parametrize("name", ["bomb.docx", "bomb.pptx"])
async def test_office_zip_bomb_is_refused_before_inflating(
    client, services, person, inline, zip_bomb, name
):
    user, headers = person
    reset_peak_rss()
    start = rss_mib()
    response = await upload(client, headers, name, zip_bomb)
    growth = peak_rss_mib() - start
    print(f"{name}: peak RSS growth {growth:.0f} MiB")
    assert_error(response, 413, "too_large", "unpacks to 1,024 MiB (limit 200 MiB)")
    assert growth < 100, f"peak RSS grew {growth:.0f} MiB"  # nothing near 1 GiB inflated
    await assert_alive(client)
    assert await footprint(services, user.id) == (0, 0, 0)


async def test_bombs_keep_memory_bounded(client, services, person, inline, zip_bomb, tmp_path):
    """Every bomb in a row, then a 30M-character text through ``ingest_bytes``: the process's
    peak RSS grows by less than ``MEMORY_BOUND_MIB``."""
    user, headers = person
    bombs = [
        ("bomb.pdf", pdf_bomb(), 413),
        ("bomb.docx", zip_bomb, 413),
        ("bomb.pptx", zip_bomb, 413),
        ("deep.html", deep_html(), 400),
    ]
    huge = tmp_path / "huge.txt"
    with huge.open("wb") as out:  # 30 MB of text, over the default 20M-character cap
        line = b"lorem ipsum dolor sit amet " * 37 + b"\n"
        for _ in range(30 * MIB // len(line) + 1):
            out.write(line)
    reset_peak_rss()
    start = rss_mib()
    for name, data, status in bombs:
        assert (await upload(client, headers, name, data)).status_code == status
        await assert_alive(client)
    with pytest.raises(DocumentTooLarge, match="more than the limit of 20,000,000") as raised:
        await ingest_bytes(services, user.id, huge.read_bytes(), "huge.txt")
    assert refusal_for(raised.value).code == "too_large"
    growth = peak_rss_mib() - start
    print(f"all bombs + 30 MB text: peak RSS growth {growth:.0f} MiB")
    assert growth < MEMORY_BOUND_MIB, f"peak RSS grew {growth:.0f} MiB"
    await assert_alive(client)
    assert await footprint(services, user.id) == (0, 0, 0)


async def test_a_bomb_sent_as_a_job_fails_with_the_same_code(client, services, person, monkeypatch):
    monkeypatch.setattr(services.settings, "api_sync_ingest_bytes", 1000)
    user, headers = person
    response = await upload(client, headers, "bomb.pdf", pdf_bomb())
    assert response.status_code == 202, response.text
    job = await wait_for_job(client, headers, response.json()["job"]["id"])
    assert job["status"] == "failed" and job["document_id"] is None
    assert job["error"]["code"] == "too_large" and "5,000 pages" in job["error"]["message"]
    await assert_alive(client)
    assert await footprint(services, user.id) == (0, 0, 0)


async def test_caps_are_settings(client, services, person, inline, monkeypatch):
    """``max_pdf_pages``, ``max_unzipped_bytes`` and ``max_document_chars`` are read per upload."""
    user, headers = person
    settings = services.settings
    assert (settings.max_pdf_pages, settings.max_unzipped_bytes, settings.max_document_chars) == (
        2000,
        200 * MIB,
        20_000_000,
    )
    monkeypatch.setattr(settings, "max_pdf_pages", 3)
    assert_error(await upload(client, headers, "four.pdf", FOUR_PAGES.read_bytes()), 413,
                 "too_large", "4 pages, more than the limit of 3")  # fmt: skip
    monkeypatch.setattr(settings, "max_unzipped_bytes", 1000)
    assert_error(await upload(client, headers, "small.docx", small_docx()), 413, "too_large",
                 "(limit 1,000 bytes)")  # fmt: skip
    monkeypatch.setattr(settings, "max_document_chars", 200)
    page = b"<html><body>" + b"<p>harbour lights all night long</p>" * 20 + b"</body></html>"
    assert_error(await upload(client, headers, "long.html", page), 413, "too_large",
                 "more than the limit of 200")  # fmt: skip
    assert_error(await upload(client, headers, "long.txt", note()), 413, "too_large",
                 "more than the limit of 200")  # fmt: skip
    await assert_alive(client)
    assert await footprint(services, user.id) == (0, 0, 0)
    monkeypatch.undo()
    monkeypatch.setattr(settings, "api_sync_ingest_bytes", 16 * MIB)
    ok = await upload(client, headers, "four.pdf", FOUR_PAGES.read_bytes())
    assert ok.status_code == 201, ok.text  # under the default caps it is ingested
    assert (await footprint(services, user.id))[0] == 1


# --- a 100 MB upload ----------------------------------------------------------------------------


def _multipart(name: str, size: int, sent: list[int]):
    """A multipart body carrying ``size`` bytes of text, generated 1 MiB at a time."""
    boundary = "hostileboundary"
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
        "Content-Type: text/plain\r\n\r\n"
    ).encode()
    tail = f"\r\n--{boundary}--\r\n".encode()
    chunk = (b"all work and no play " * 50_000)[:MIB]

    async def body():
        yield head
        for _ in range(size // MIB):
            sent[0] += MIB
            yield chunk
        yield tail

    return f"multipart/form-data; boundary={boundary}", len(head) + size + len(tail), body()


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "chunked"])
async def test_100_mb_text_upload_is_413(client, services, person, declared):
    user, headers = person
    sent = [0]
    content_type, length, body = _multipart("huge.txt", 100 * MIB, sent)
    request_headers = {**headers, "Content-Type": content_type}
    if declared:
        request_headers["Content-Length"] = str(length)
    reset_peak_rss()
    start = rss_mib()
    response = await client.post("/api/documents", headers=request_headers, content=body)
    growth = peak_rss_mib() - start
    print(f"100 MB upload ({declared=}): sent {sent[0] / MIB:.0f} MiB, RSS growth {growth:.0f} MiB")
    assert_error(response, 413, "too_large", "larger than the limit of 52,428,800 bytes")
    # with a declared length nothing is read; without, reading stops just past the limit
    assert sent[0] <= (MIB if declared else 52 * MIB)
    assert growth < 200, f"peak RSS grew {growth:.0f} MiB"
    await assert_alive(client)
    assert await footprint(services, user.id) == (0, 0, 0)


# --- a chunked JSON body over the limit ----------------------------------------------------------


@contextlib.asynccontextmanager
async def live_server():
    """The app served by a real uvicorn on a loopback port in this process (no lifespan:
    the session's services are shared): yields ``(host, port)``."""
    import uvicorn

    from tests.support.programs import free_port

    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, lifespan="off", log_level="warning")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    try:
        for _ in range(200):
            if server.started:
                break
            await asyncio.sleep(0.05)
        assert server.started, "uvicorn did not start"
        yield "127.0.0.1", port
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, timeout=20)


async def raw_request(host: str, port: int, head: str, chunks: list[bytes], end: bool) -> bytes:
    """Send ``head`` and ``chunks`` in chunked transfer coding (the closing empty chunk only
    with ``end``), then read the response."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(head.encode())
        for chunk in chunks:
            writer.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            await writer.drain()
        if end:
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        return await asyncio.wait_for(reader.read(), timeout=20)  # the server closes
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()


def parse_response(raw: bytes) -> tuple[int, dict]:
    head, _, body = raw.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    if b"transfer-encoding: chunked" in head.lower():  # de-chunk
        data, rest = b"", body
        while rest:
            size, _, rest = rest.partition(b"\r\n")
            if not int(size, 16):
                break
            data, rest = data + rest[: int(size, 16)], rest[int(size, 16) + 2 :]
        body = data
    return status, json.loads(body)


async def test_a_chunked_json_body_over_the_limit_is_413_before_it_ends(
    services, person, monkeypatch
):
    """No ``Content-Length``: the body is counted as it arrives and refused at the first chunk
    past the limit. The closing chunk is never sent, so a server that buffered the whole
    body first would never answer."""
    user, headers = person
    limit = 64 * 1024
    monkeypatch.setattr(services.settings, "api_max_upload_bytes", limit)
    head = (
        "POST {path} HTTP/1.1\r\nHost: test\r\n"
        f"Authorization: {headers['Authorization']}\r\n"
        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
        "Connection: close\r\n\r\n"
    )
    opening = b'{"title": "endless", "text": "'
    chunks = [opening] + [b"w " * 8 * 1024] * 5  # 80 KiB of text so far, and no end
    async with live_server() as (host, port):
        started = time.monotonic()
        raw = await raw_request(host, port, head.format(path="/api/documents/text"), chunks, False)
        seconds = time.monotonic() - started
        status, body = parse_response(raw)
        print(f"chunked body over a {limit:,} byte limit: {status} after {seconds:.2f} s")
        assert status == 413, raw
        assert body["error"]["code"] == "too_large", body
        assert f"larger than the limit of {limit:,} bytes" in body["error"]["message"], body

        # a chunked body under the limit is read whole and served as usual
        small = [b'{"title": ', b'"chunked and small"}']
        raw = await raw_request(host, port, head.format(path="/api/chats"), small, True)
        status, body = parse_response(raw)
        assert status == 201 and body["chat"]["title"] == "chunked and small", raw
    assert await footprint(services, user.id) == (0, 0, 0)


# --- file names ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["../../etc/passwd.txt", "..\\..\\x.txt", "/abs/olute.md", "a/../../b.txt"]
)
async def test_path_traversal_names_are_reduced_to_a_base_name(
    client, services, person, inline, name
):
    user, headers = person
    tag = uuid.uuid4().hex[:8]
    response = await upload(client, headers, name, note(tag))
    assert response.status_code == 201, response.text
    document = response.json()["document"]
    async with services.engine.connect() as conn:
        stored = (
            await conn.execute(
                text("SELECT filename, title FROM documents WHERE id = :d"), {"d": document["id"]}
            )
        ).one()
    for value in stored:
        assert "/" not in value and "\\" not in value and ".." not in value, stored
    assert stored.filename == name.replace("\\", "/").rsplit("/", 1)[-1]
    await assert_alive(client)
    assert not Path("/etc/passwd.txt").exists() and not Path("/x.txt").exists()
    # the service behind the route does the same for any caller (jobs, CLI)
    result = await ingest_upload(services, user.id, note(), name)
    async with services.engine.connect() as conn:
        filename = (
            await conn.execute(
                text("SELECT filename FROM documents WHERE id = :d"), {"d": result.document_id}
            )
        ).scalar_one()
    assert "/" not in filename and "\\" not in filename and ".." not in filename


async def test_ingest_bytes_refusals_store_nothing(services, person):
    """The same hostile files straight into ``ingest_bytes`` (what the CLI and jobs call)."""
    user, _ = person
    cases = [
        ("truncated.pdf", truncated_pdf(), UnreadableDocument, "unreadable"),
        ("bomb.pdf", pdf_bomb(), DocumentTooLarge, "too_large"),
        ("deep.html", deep_html(), UnreadableDocument, "unreadable"),
        ("bad.txt", b"\xff\xfe\xfa", UnreadableDocument, "unreadable"),
    ]
    for name, data, error, code in cases:
        with pytest.raises(error) as raised:
            await ingest_bytes(services, user.id, data, name)
        assert refusal_for(raised.value).code == code
    assert await footprint(services, user.id) == (0, 0, 0)


# --- hostile requests ---------------------------------------------------------------------------


async def test_hostile_requests_get_the_error_shape(client, services, person, monkeypatch):
    user, headers = person
    json_headers = {**headers, "Content-Type": "application/json"}
    monkeypatch.setattr(services.settings, "api_max_upload_bytes", 100_000)
    cases = [
        # oversized JSON bodies (text over the upload limit)
        (
            client.post(
                "/api/documents/text", headers=headers, json={"title": "big", "text": "w " * 60_000}
            ),
            413,
            "too_large",
        ),
        (
            client.post("/api/transcripts", headers=headers, json={"text": "w " * 60_000}),
            413,
            "too_large",
        ),  # fmt: skip
        # JSON to the multipart route, a form to a JSON route
        (client.post("/api/documents", headers=headers, json={"file": "x"}), 400, "invalid_source"),
        (
            client.post("/api/documents/text", headers=headers, data={"title": "t", "text": "x"}),
            422,
            "invalid_request",
        ),
        (
            client.post("/api/documents/url", headers=headers, data={"url": "x"}),
            422,
            "invalid_request",
        ),  # fmt: skip
        # malformed JSON, JSON of the wrong shape, NUL characters
        (
            client.post("/api/documents/text", headers=json_headers, content=b'{"title": "x", "te'),
            422,
            "invalid_request",
        ),  # fmt: skip
        (
            client.post("/api/documents/text", headers=json_headers, content=b"[1, 2, 3]"),
            422,
            "invalid_request",
        ),  # fmt: skip
        # not even text: FastAPI cannot decode the body
        (
            client.post("/api/documents/text", headers=json_headers, content=b"\xff\xfe{"),
            400,
            "bad_request",
        ),  # fmt: skip
        (
            client.post(
                "/api/documents/text", headers=headers, json={"title": "a\x00", "text": "b"}
            ),
            422,
            "invalid_request",
        ),  # fmt: skip
        # a multipart body that is not one
        (
            client.post(
                "/api/documents",
                headers={**headers, "Content-Type": "multipart/form-data; boundary=zz"},
                content=b"--zz\r\ngarbage without headers or an end",
            ),
            400,
            "invalid_source",
        ),
        (
            client.post(
                "/api/documents",
                headers=headers,
                files={"file": ("a.txt", note())},
                data={"title": "bad\x00title"},
            ),
            422,
            "invalid_request",
        ),
        (
            client.post(
                "/api/documents",
                headers={**headers, "Content-Type": "multipart/form-data"},  # no boundary
                content=b"whatever",
            ),
            400,
            "invalid_source",
        ),
    ]
    for number, (request, status, code) in enumerate(cases):
        response = await request
        assert (number, response.status_code) == (number, status), response.text
        assert_error(response, status, code)
        await assert_alive(client)
    assert await footprint(services, user.id) == (0, 0, 0)


# --- SSRF through POST /api/documents/url --------------------------------------------------------


async def job_count(services, user_id) -> int:
    async with services.engine.connect() as conn:
        return (
            await conn.execute(
                text("SELECT count(*) FROM ingest_jobs WHERE user_id = :u"), {"u": user_id}
            )
        ).scalar_one()


async def test_ssrf_targets_are_refused_before_any_job(client, services, person, monkeypatch):
    async def resolve(host: str) -> list[str]:  # no DNS: names resolve from this table
        table = {"intranet.test": ["10.0.0.7"], "mixed.test": ["93.184.216.34", "127.0.0.1"]}
        if host not in table:
            raise OSError(f"unknown host {host}")
        return table[host]

    monkeypatch.setattr(fetch, "system_resolver", resolve)
    user, headers = person
    urls = [
        "http://127.0.0.1/secret",
        "http://[::1]/",
        "http://10.0.0.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::ffff:169.254.169.254]/",
        "http://0.0.0.0:8080/",
        "file:///etc/passwd",
        "ftp://example.com/x.txt",
        "http://user:pw@93.184.216.34/",
        "http://intranet.test/wiki",
        "http://mixed.test/page",
    ]
    for url in urls:
        response = await client.post("/api/documents/url", headers=headers, json={"url": url})
        assert_error(response, 400, "unsafe_url")
        await assert_alive(client)
    assert await job_count(services, user.id) == 0
    assert await footprint(services, user.id) == (0, 0, 0)


class _Redirects(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self):  # noqa: N802 (http.server's naming)
        self.hits.append(self.path)
        targets = {
            "/to-private": "http://10.0.0.1/",
            "/to-metadata": "http://169.254.169.254/latest/meta-data/",
            "/to-private-name": "http://intranet.test/",
            "/to-file": "file:///etc/passwd",
        }
        self.send_response(302)
        self.send_header("Location", targets.get(self.path, "http://127.0.0.2/"))
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def redirect_server():
    _Redirects.hits = []
    with serving(_Redirects) as url:
        yield url


async def test_redirects_to_private_targets_fail_the_job(
    client, services, person, monkeypatch, redirect_server
):
    """Only this test server's own address (127.0.0.1) counts as public; every hop it
    redirects to is vetted again and refused."""
    public = fetch.ip_is_public
    monkeypatch.setattr(fetch, "ip_is_public", lambda ip: str(ip) == "127.0.0.1" or public(ip))

    async def resolve(host: str) -> list[str]:
        if host == "intranet.test":
            return ["10.0.0.7"]
        raise OSError(f"unknown host {host}")

    monkeypatch.setattr(fetch, "system_resolver", resolve)
    user, headers = person
    for path in ("/to-private", "/to-metadata", "/to-private-name", "/to-file"):
        response = await client.post(
            "/api/documents/url", headers=headers, json={"url": redirect_server + path}
        )
        assert response.status_code == 202, response.text
        job = await wait_for_job(client, headers, response.json()["job"]["id"])
        assert job["status"] == "failed" and job["document_id"] is None, job
        assert job["error"]["code"] == "unsafe_url", job
        await assert_alive(client)
    assert sorted(_Redirects.hits) == sorted(
        ["/to-private", "/to-metadata", "/to-private-name", "/to-file"]
    )
    assert await footprint(services, user.id) == (0, 0, 0)
