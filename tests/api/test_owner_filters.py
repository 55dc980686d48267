"""Every hot query names its owner, or is listed in docs/SCALING.md as one that does not yet.

The SQL the API runs for one user's requests (search, a chat turn, the library, a chunk,
chats, corrections, usage) is captured at the driver and read back. Distributing the tables
by owner (Citus, docs/SCALING.md) routes a statement to one shard only when it filters by
``user_id``; a statement over the owners' tables without that filter must be keyed by ids
and must appear in the document's list of statements that still fan out, so the list stays
true as queries change (a new one fails here until it is filtered or listed).
"""

from __future__ import annotations

import re
import uuid

import psycopg
import pytest

from tests.support.paths import ROOT

pytestmark = pytest.mark.usefixtures("close_checkpointer_after")

SCALING = ROOT / "docs" / "SCALING.md"
OWNER_TABLES = (
    "documents",
    "document_access",
    "parent_chunks",
    "child_chunks",
    "keyword_terms",
    "keyword_postings",
    "chapter_summaries",
    "transcripts",
    "chats",
    "chat_messages",
    "chat_turn_embeddings",
    "corrections",
    "usage_monthly",
    "ingest_jobs",
)
"""Tables a distributed Postgres would shard by owner (docs/SCALING.md)."""
_TABLE = re.compile(r"\b(?:FROM|JOIN|INTO|UPDATE)\s+(\w+)", re.I)
_OWNER = re.compile(
    r"\b(?:\w+\.)?user_id\s*=\s*(?:%\(\w+\)[sb]|ANY\s*\()|\bu\.id\s*=\s*%\(\w+\)[sb]", re.I
)
_INSERT_OWNED = re.compile(r"^INSERT INTO \w+(?: AS \w+)? \([^)]*\buser_id\b", re.I)
"""An insert that writes the owner's id into the row: routed by that value."""
_KEYED = re.compile(r"\b(?:\w+\.)?(?:id|document_id|chat_id)\s*=\s*(?:%\(\w+\)[sb]|ANY\s*\()", re.I)
_LISTED = re.compile(r"^- `([^`]+)`", re.M)

TEXT = (
    "The lighthouse keeper Marguerite feeds seventeen herring gulls every dawn from the "
    "lantern gallery. Marguerite paints the lamp room cobalt blue each spring.\n\n"
    "The supply boat Albatross brings paraffin, flour and letters to the lighthouse on "
    "Thursdays. Its skipper, Tobias Wren, plays the concertina while unloading crates."
)


@pytest.fixture
def statements(monkeypatch):
    """Every statement run on a psycopg cursor (SQLAlchemy's and the search read pool's)."""
    seen: list[str] = []
    execute = psycopg.AsyncCursor.execute

    async def recording(self, query, params=None, **kw):
        sql = query if isinstance(query, str) else query.as_string(self)
        seen.append(re.sub(r"\s+", " ", sql).strip())
        return await execute(self, query, params, **kw)

    monkeypatch.setattr(psycopg.AsyncCursor, "execute", recording)
    return seen


def owner_tables(sql: str) -> set[str]:
    """The owners' tables a statement reads or writes."""
    return {t.lower() for t in _TABLE.findall(sql)} & set(OWNER_TABLES)


def listed_fan_outs() -> list[str]:
    """The statements docs/SCALING.md lists as not yet routed by owner (fragments)."""
    section = SCALING.read_text().split("## Hot queries not yet routed by owner", 1)[1]
    return _LISTED.findall(section.split("\n## ", 1)[0])


async def _hot_requests(services, client) -> None:
    from agent.library.accounts import add_user

    user, token = await add_user(services, f"owner-{uuid.uuid4().hex[:6]}")
    headers = {"Authorization": f"Bearer {token}"}
    r = await client.post(
        "/api/documents", headers=headers, files={"file": ("keeper.txt", TEXT.encode())}
    )
    assert r.status_code == 201, r.text
    return headers, r.json()["document"]["id"]


async def test_every_hot_query_is_routed_by_owner_or_listed(services, client, statements):
    headers, doc = await _hot_requests(services, client)
    statements.clear()
    search = await client.post("/api/search", headers=headers, json={"query": "herring gulls"})
    assert search.status_code == 200 and search.json()["citations"], search.text
    chunk = search.json()["citations"][0]["chunkId"]
    asked = await client.post(
        "/api/ask", headers=headers, json={"question": "How many gulls does Marguerite feed?"}
    )
    assert asked.status_code == 200, asked.text
    chat = asked.json()["chat_id"]
    for path in (
        "/api/documents",
        f"/api/documents/{doc}",
        f"/api/chunks/{chunk}",
        "/api/chats",
        f"/api/chats/{chat}/messages",
        "/api/corrections",
        "/api/usage",
    ):
        got = await client.get(path, headers=headers)
        assert got.status_code == 200, (path, got.text)

    hot = [s for s in statements if owner_tables(s)]
    assert len(hot) >= 20  # the capture saw the requests' SQL
    listed = listed_fan_outs()
    unrouted = [s for s in hot if not (_OWNER.search(s) or _INSERT_OWNED.search(s))]
    for sql in unrouted:
        # never a scan over everyone's rows: keyed by the ids an owner-filtered read gave
        assert _KEYED.search(sql), f"neither owner-filtered nor keyed by id: {sql[:300]}"
        assert any(fragment in sql for fragment in listed), (
            f"a hot query without an owner filter, not listed in docs/SCALING.md: {sql[:300]}"
        )
    for fragment in listed:  # the list names only statements that still run
        assert any(fragment in sql for sql in unrouted), f"listed but not seen: {fragment}"
    # the search itself reads the chunks through the owner's visible set
    searches = [s for s in hot if "child_chunks" in s and "embedding <=>" in s]
    assert searches and all(_OWNER.search(s) for s in searches)
