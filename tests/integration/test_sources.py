"""Sources beyond files: pasted text, transcripts, URLs; the ``ingest`` graph and its CLI."""

from __future__ import annotations

import json
import uuid
from http.server import BaseHTTPRequestHandler

import pytest
from sqlalchemy import text

from agent.ingest.sources import IngestRequest, InvalidSource, ingest_source
from graphs.ingest import IngestContext
from graphs.ingest import graph as ingest_graph
from tests.support.local_http import send_body, serving
from tests.support.programs import quire
from tests.support.samples import book_text


async def _one(services, sql: str, **params):
    async with services.engine.connect() as conn:
        return (await conn.execute(text(sql), params)).one()


async def test_pasted_text_needs_a_title_and_dedupes(services, new_user):
    user = await new_user("paste")
    body = f"# Field notes {uuid.uuid4().hex[:6]}\n\nThe walrus counted oysters on the beach."
    with pytest.raises(InvalidSource, match="title"):
        await ingest_source(services, user.id, IngestRequest(text=body))
    first = await ingest_source(services, user.id, IngestRequest(text=body, title="Notes"))
    again = await ingest_source(services, user.id, IngestRequest(text=body, title="Notes"))
    assert first.status == "ingested" and again.status == "duplicate"
    assert again.document_id == first.document_id
    row = await _one(
        services,
        "SELECT title, c.chapter_title FROM documents d JOIN child_chunks c ON c.document_id = d.id "
        "WHERE d.id = :d",
        d=first.document_id,
    )
    assert row.title == "Notes" and row.chapter_title.startswith("Field notes")


async def test_transcript_is_redacted_tagged_and_searchable(services, new_user):
    user = await new_user("voice")
    raw = (
        "okay so the lighthouse keeper said the lighthouse lamp needs new lenses, "
        "call me at alice@example.com about the lenses budget"
    )
    result = await ingest_source(
        services,
        user.id,
        IngestRequest(raw_text=raw, refined_text="Lighthouse lamp: order new lenses."),
    )
    doc = await _one(
        services,
        "SELECT d.title, d.file_type, d.tags, d.metadata, t.raw_text, t.refined_text, t.echotag, "
        "t.echodate FROM documents d JOIN transcripts t ON t.document_id = d.id WHERE d.id = :d",
        d=result.document_id,
    )
    assert doc.file_type == "transcript" and doc.title.startswith("Transcript ")
    assert "lighthouse" in doc.tags and 3 <= len(doc.tags) <= 6  # generated: none were given
    assert doc.echotag == ", ".join(doc.tags)
    assert "alice@example.com" not in doc.raw_text and "[REDACTED_EMAIL]" in doc.raw_text
    assert doc.refined_text == "Lighthouse lamp: order new lenses."
    assert doc.metadata["echodate"] == doc.echodate.isoformat()
    chunks = await _one(
        services,
        "SELECT string_agg(text, ' ') AS body FROM child_chunks WHERE document_id = :d",
        d=result.document_id,
    )
    assert "order new lenses" in chunks.body and "alice@example.com" not in chunks.body

    tagged = await ingest_source(
        services,
        user.id,
        IngestRequest(
            raw_text="standup notes: ship it", tags=["Standup", "Release"], echotag="daily"
        ),
    )
    row = await _one(
        services,
        "SELECT d.tags, t.echotag FROM documents d JOIN transcripts t ON t.document_id = d.id "
        "WHERE d.id = :d",
        d=tagged.document_id,
    )
    assert row.tags == ["standup", "release"] and row.echotag == "daily"


class _Site(BaseHTTPRequestHandler):
    pages: dict[str, bytes] = {}

    def do_GET(self):  # noqa: N802 (http.server's name)
        body = self.pages.get(self.path)
        if body is None:
            self.send_error(404)
            return
        send_body(self, 200, body, "text/html; charset=utf-8")

    def log_message(self, *args):
        pass


@pytest.fixture
def site():
    with serving(_Site) as url:
        yield url, _Site.pages


def _page(words: str) -> bytes:
    return (
        f"<html><head><title>Harbour guide</title></head><body><nav>Home | About</nav>"
        f"<main><h1>Harbour guide</h1><p>{words}</p></main></body></html>"
    ).encode()


async def test_url_is_fetched_and_replaced_when_it_changes(services, new_user, site, monkeypatch):
    base, pages = site
    user = await new_user("web")
    pages["/guide"] = _page("The harbour master opens the gate at dawn.")
    with pytest.raises(ValueError, match="refused"):
        await ingest_source(services, user.id, IngestRequest(url=f"{base}/guide"))
    monkeypatch.setattr(services.settings, "allow_private_urls", True)
    first = await ingest_source(services, user.id, IngestRequest(url=f"{base}/guide"))
    pages["/guide"] = _page("The harbour master now opens the gate at noon.")
    second = await ingest_source(services, user.id, IngestRequest(url=f"{base}/guide"))
    assert (first.status, second.status) == ("ingested", "replaced")
    doc = await _one(
        services,
        "SELECT count(*) AS n, max(source_uri) AS uri, max(title) AS title FROM documents "
        "WHERE user_id = :u",
        u=user.id,
    )
    assert (doc.n, doc.uri, doc.title) == (1, f"{base}/guide", "Harbour guide")
    body = await _one(
        services,
        "SELECT string_agg(text, ' ') AS body FROM child_chunks WHERE document_id = :d",
        d=second.document_id,
    )
    assert "noon" in body.body and "Home | About" not in body.body


async def test_ingest_graph_streams_stages_and_reports_errors(services, tmp_path):
    path = tmp_path / "tale.txt"
    path.write_text(book_text())
    stages, final = [], {}
    async for mode, chunk in ingest_graph.astream(
        {"path": str(path), "summarize": True},
        context=IngestContext(user="graph-user"),
        stream_mode=["custom", "values"],
    ):
        if mode == "custom":
            stages.append(chunk["stage"])
        else:
            final = chunk
    assert final["status"] == "ingested" and final["chunks"] > 0 and final["parents"] >= 3
    assert final["summary_status"] == "done"
    order = list(dict.fromkeys(stages))
    assert order[:4] == ["parse", "chunk", "embed", "store"]
    assert {"summaries (sections)", "summaries (chapters)", "summaries (book)"} <= set(order)
    row = await _one(
        services,
        "SELECT summary_model, global_summary FROM documents WHERE id = :d",
        d=uuid.UUID(final["document_id"]),
    )
    assert row.summary_model == "extractive" and row.global_summary

    refused = await ingest_graph.ainvoke({"url": "http://169.254.169.254/latest/meta-data"})
    assert refused["status"] == "error" and refused["error_code"] == "unsafe_url"
    both = await ingest_graph.ainvoke({"url": "https://example.org", "text": "x", "title": "t"})
    assert both["error_code"] == "invalid_source"
    unsupported = await ingest_graph.ainvoke(
        {"content_base64": "aGVsbG8=", "filename": "photo.jpg"}
    )
    assert unsupported["error_code"] == "unsupported_type"


def test_cli_refuses_private_urls_and_summarizes(tmp_path):
    user = f"cli-sum-{uuid.uuid4().hex[:6]}"
    refused = quire("ingest", "http://127.0.0.1:9/secret", "--user", user)
    assert refused.returncode == 1 and "refused" in refused.stderr
    book = tmp_path / "tale.txt"
    book.write_text(book_text())
    stored = json.loads(quire("ingest", str(book), "--user", user, "--json").stdout)[0]
    assert stored["summary_status"] == "pending"
    run = quire("summarize", stored["document_id"], "--user", user, "--model", "extractive")
    assert run.returncode == 0, run.stderr
    assert "summaries by extractive" in run.stdout
    shown = json.loads(quire("docs", "show", stored["document_id"], "--user", user).stdout)
    assert shown["summary_status"] == "done" and shown["summaries"]["global_summary"]
    assert [c["title"] for c in shown["summaries"]["table_of_contents"]["chapters"]][-1] == (
        "CHAPTER 3."
    )
    other = quire("summarize", stored["document_id"], "--user", "someone-else")
    assert other.returncode == 1 and "no document" in other.stderr
