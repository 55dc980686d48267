"""Property test: nothing lost, no cross-tenant leak, over the HTTP API.

Four users own documents with OVERLAPPING text (the same sentences in everybody's
documents) plus one marker word per document. User 0 shares one document with user 1
(``POST /api/documents/{id}/shares``), later revokes it. Hypothesis picks (user, route,
target object, search mode, filters, query) and every answer is checked: each document,
chunk, citation, chat, message and correction returned belongs to the requester or to a
document currently shared with them, another user's object answers 404, and the requester's
own objects are all still there. After the revoke nothing of the shared document is visible
to user 1. LangGraph thread isolation (``langgraph dev``) is covered by
tests/e2e/test_langgraph_auth.py and is not started again here.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from agent.retrieval.citations import citation_id

USERS = 4
DOCS_PER_USER = 2
SHARED_DOC = 0  # user 0's first document ...
GRANTEE = 1  # ... shared with user 1 (and revoked in the second phase)
PHASE_MIN_REQUESTS = 250
TOTAL_MIN_REQUESTS = 500

COMMON = [
    "The lighthouse keeper feeds seventeen herring gulls every dawn from the lantern gallery.",
    "The supply boat brings paraffin, flour and letters to the island on Thursdays.",
    "A badger raids the lowest beehive every October, so the keeper fences the orchard.",
    "The tide tables are pinned to the kitchen door beside the barometer and the almanac.",
]
COMMON_QUESTIONS = [
    "How many herring gulls does the lighthouse keeper feed?",
    "What does the supply boat bring on Thursdays?",
    "Who raids the beehive every October?",
]


@dataclass
class Doc:
    id: str
    owner: int
    marker: str
    corpus: str
    chunks: list[str] = field(default_factory=list)


@dataclass
class World:
    headers: list[dict]
    names: list[str]
    docs: list[Doc]
    chunk_doc: dict[str, str]  # chunk uuid -> document id
    citation_doc: dict[str, str]  # citation id (#chk_...) -> document id
    chats: dict[str, int]  # chat id -> owner
    messages: dict[str, int]  # message id -> owner
    corrections: dict[str, int]  # correction id -> owner
    correction_markers: dict[str, int]  # marker word in a correction -> owner
    turns: list[int]  # successful asks per user (the usage counter)
    shared: bool = True
    requests: dict[str, int] = field(default_factory=dict)  # phase -> requests sent
    leaks: list[str] = field(default_factory=list)
    checked: int = 0  # documents, chunks and citations checked in answers

    def visible(self, user: int) -> set[str]:
        ids = {d.id for d in self.docs if d.owner == user}
        if self.shared and user == GRANTEE:
            ids.add(self.docs[SHARED_DOC].id)
        return ids

    def invisible_markers(self, user: int) -> set[str]:
        visible = self.visible(user)
        return {d.marker for d in self.docs if d.id not in visible} | {
            m for m, owner in self.correction_markers.items() if owner != user
        }


def _doc_text(marker: str, owner: int, rank: int) -> str:
    paragraphs = [
        f"{COMMON[(rank + i) % len(COMMON)]} {COMMON[(rank + i + 1) % len(COMMON)]} "
        f"The archivist wrote {marker} in the margin of page {i} for reader {owner}."
        for i in range(5)
    ]
    paragraphs.append(
        f"Only this notebook mentions {marker}: the word {marker} is the secret of owner {owner}."
    )
    return f"Notebook {marker}\n\n" + "\n\n".join(paragraphs) + "\n"


@pytest.fixture(scope="module")
async def client(services):
    from api.app import app

    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test", timeout=120) as c:
        yield c


pytestmark = pytest.mark.usefixtures("close_checkpointer_after")


@pytest.fixture(scope="module")
async def world(services, client) -> World:
    from agent.ingest.pipeline import ingest_bytes
    from agent.library.accounts import add_user

    headers, names, docs = [], [], []
    for u in range(USERS):
        user, token = await add_user(services, f"iso{u}-{uuid.uuid4().hex[:6]}")
        names.append(user.name)
        headers.append({"Authorization": f"Bearer {token}"})
        for r in range(DOCS_PER_USER):
            marker = f"zq{uuid.uuid4().hex[:10]}"
            corpus = "default" if r == 0 else "notes"
            result = await ingest_bytes(
                services, user.id, _doc_text(marker, u, r).encode(), f"{marker}.txt", corpus=corpus
            )
            docs.append(Doc(str(result.document_id), u, marker, corpus))
    chunk_doc: dict[str, str] = {}
    async with services.engine.connect() as conn:
        rows = await conn.execute(
            text("SELECT id, document_id FROM child_chunks WHERE document_id = ANY(:ids)"),
            {"ids": [uuid.UUID(d.id) for d in docs]},
        )
        for chunk, doc in rows:
            chunk_doc[str(chunk)] = str(doc)
    by_id = {d.id: d for d in docs}
    for chunk, doc in chunk_doc.items():
        by_id[doc].chunks.append(chunk)
    assert all(d.chunks for d in docs)
    w = World(
        headers=headers,
        names=names,
        docs=docs,
        chunk_doc=chunk_doc,
        citation_doc={citation_id(c): d for c, d in chunk_doc.items()},
        chats={},
        messages={},
        corrections={},
        correction_markers={},
        turns=[0] * USERS,
    )
    # each user: one chat with an answer, and two corrections carrying a private marker
    for u in range(USERS):
        r = await client.post(
            "/api/ask", json={"question": COMMON_QUESTIONS[0]}, headers=headers[u]
        )
        assert r.status_code == 200, r.text
        body = r.json()
        w.chats[body["chat_id"]] = u
        w.messages[body["message_id"]] = u
        w.turns[u] += 1
        marker = f"cq{uuid.uuid4().hex[:10]}"
        w.correction_markers[marker] = u
        for payload in (
            {"message_id": body["message_id"], "correction": f"Gulls are {marker} birds."},
            {"question": COMMON_QUESTIONS[1], "correction": f"The boat brings {marker} too."},
        ):
            r = await client.post("/api/corrections", json=payload, headers=headers[u])
            assert r.status_code == 201, r.text
            w.corrections[r.json()["correction"]["id"]] = u
    shared = docs[SHARED_DOC]
    r = await client.post(
        f"/api/documents/{shared.id}/shares", json={"user": names[GRANTEE]}, headers=headers[0]
    )
    assert r.status_code == 201, r.text
    return w


# --- the checks ----------------------------------------------------------------------------


class Checker:
    """Sends one request at a time for ``user`` and records any leak it sees."""

    def __init__(self, world: World, client: httpx.AsyncClient, user: int, phase: str):
        self.w, self.c, self.u, self.phase = world, client, user, phase
        self.visible = world.visible(user)
        self.hidden_markers = world.invisible_markers(user)

    def leak(self, what: str) -> None:
        self.w.leaks.append(f"[{self.phase}] user {self.u}: {what}")

    async def send(self, method: str, url: str, **kw) -> httpx.Response:
        self.w.requests[self.phase] = self.w.requests.get(self.phase, 0) + 1
        r = await self.c.request(method, url, headers=self.w.headers[self.u], **kw)
        assert r.status_code < 500, f"{method} {url}: {r.status_code} {r.text}"
        return r

    def no_hidden_text(self, what: str, value: object, allowed: str = "") -> None:
        blob = json.dumps(value) if not isinstance(value, str) else value
        for marker in self.hidden_markers:
            if marker in blob and marker not in allowed:
                self.leak(f"{what} contains the hidden marker {marker}")

    def chunk_ok(self, what: str, chunk_id: str | None, document_id: str | None) -> None:
        self.w.checked += 1
        if document_id not in self.visible:
            self.leak(f"{what}: document {document_id} is not visible")
        if chunk_id is not None and self.w.chunk_doc.get(chunk_id, document_id) != document_id:
            self.leak(f"{what}: chunk {chunk_id} is not in document {document_id}")
        if chunk_id is not None and self.w.chunk_doc.get(chunk_id) not in self.visible:
            # chunks of documents made during this test are unknown: only ours exist here
            self.leak(f"{what}: chunk {chunk_id} is not a visible chunk")

    def answer_citations(self, what: str, body: dict, question: str) -> None:
        for c in body.get("citations") or []:
            if c.get("kind") == "web":
                continue
            self.chunk_ok(f"{what} citation {c.get('id')}", c.get("chunk_id"), c.get("document_id"))
            if c.get("id") and self.w.citation_doc.get(c["id"]) not in self.visible:
                self.leak(f"{what}: citation id {c['id']} is not visible")
        for ref, value in (body.get("chunk_map") or {}).items():
            if self.w.citation_doc.get(ref) not in self.visible and (
                self.w.citation_doc.get("#" + ref.lstrip("#")) not in self.visible
            ):
                self.leak(f"{what}: chunk_map entry {ref} -> {value} is not visible")
        self.no_hidden_text(f"{what} answer", body.get("answer") or "", allowed=question)
        self.no_hidden_text(f"{what} citations", body.get("citations") or [])
        self.no_hidden_text(f"{what} sources", body.get("sources") or [], allowed=question)

    # --- the routes -------------------------------------------------------------------------

    async def search(self, query: str, mode: str, corpus: str | None, ids: list[str] | None):
        payload: dict = {"query": query, "mode": mode, "k": 10}
        if corpus is not None:
            payload["corpus"] = corpus
        if ids is not None:
            payload["document_ids"] = ids
        r = await self.send("POST", "/api/search", json=payload)
        assert r.status_code == 200, r.text
        body = r.json()
        for c in body["citations"]:
            self.chunk_ok(f"search {mode} {c['id']}", c["chunkId"], c["documentId"])
            if self.w.citation_doc.get(c["id"]) != c["documentId"]:
                self.leak(f"search citation id {c['id']} does not match its chunk")
            if ids is not None and c["documentId"] not in ids:
                self.leak(f"search ignored the document_ids filter: {c['documentId']}")
            if corpus is not None:
                doc = next(d for d in self.w.docs if d.id == c["documentId"])
                if doc.corpus != corpus:
                    self.leak(f"search ignored the corpus filter: {doc.id} in {doc.corpus}")
        self.no_hidden_text("search citations", body["citations"])
        hints = "\n".join(
            line for line in body["answerHints"].splitlines() if not line.startswith("**Query:**")
        )
        self.no_hidden_text("search answerHints", hints)

    async def chunk(self, doc: Doc, index: int, as_citation: bool, with_hash: bool):
        chunk = doc.chunks[index % len(doc.chunks)]
        ref = citation_id(chunk) if as_citation else chunk
        if as_citation and not with_hash:
            ref = ref.lstrip("#")
        r = await self.send("GET", f"/api/chunks/{quote(ref, safe='')}")
        if doc.id in self.visible:
            if r.status_code != 200:
                self.leak(f"lost: chunk {ref} of visible document {doc.id} -> {r.status_code}")
                return
            got = r.json()["chunk"]
            self.chunk_ok(f"chunk {ref}", got["id"], got["document_id"])
            if got["id"] != chunk:
                self.leak(f"chunk {ref} answered another chunk {got['id']}")
        elif r.status_code != 404:
            self.leak(f"chunk {ref} of hidden document {doc.id} -> {r.status_code}")

    async def documents(self):
        r = await self.send("GET", "/api/documents")
        assert r.status_code == 200, r.text
        got = {d["id"] for d in r.json()["documents"]}
        if got - self.visible:
            self.leak(f"document list shows hidden documents {got - self.visible}")
        if self.visible - got:
            self.leak(f"lost: document list misses {self.visible - got}")
        for d in r.json()["documents"]:
            expect_shared = d["id"] == self.w.docs[SHARED_DOC].id and self.u != 0
            if d["shared"] != expect_shared:
                self.leak(f"document {d['id']} shared flag {d['shared']}")

    async def document(self, doc: Doc):
        r = await self.send("GET", f"/api/documents/{doc.id}")
        if doc.id in self.visible:
            if r.status_code != 200 or r.json()["document"]["id"] != doc.id:
                self.leak(f"lost: visible document {doc.id} -> {r.status_code}")
        elif r.status_code != 404:
            self.leak(f"hidden document {doc.id} -> {r.status_code}")
        else:
            self.no_hidden_text("document 404", r.json())

    async def chat(self, chat_id: str, messages: bool):
        url = f"/api/chats/{chat_id}" + ("/messages" if messages else "")
        r = await self.send("GET", url)
        if self.w.chats[chat_id] != self.u:
            if r.status_code != 404:
                self.leak(f"another user's chat {url} -> {r.status_code}")
            return
        if r.status_code != 200:
            self.leak(f"lost: own chat {url} -> {r.status_code}")
            return
        if messages:
            rows = r.json()["messages"]
            if not any(m["role"] == "user" for m in rows) or not any(
                m["role"] == "assistant" for m in rows
            ):
                self.leak(f"lost: chat {chat_id} misses its user or assistant message")
            for m in rows:
                if m["id"] in self.w.messages and self.w.messages[m["id"]] != self.u:
                    self.leak(f"chat {chat_id} holds another user's message {m['id']}")
                if m["role"] == "assistant":
                    # citations stored with an old answer may name a since revoked document;
                    # they are the user's own history, so only other users' markers count
                    for c in m["citations"]:
                        owner = next(
                            (d.owner for d in self.w.docs if d.id == c.get("document_id")), None
                        )
                        if owner is not None and owner != self.u and owner != 0:
                            self.leak(f"message {m['id']} cites user {owner}'s document")
                        if owner == 0 and self.u not in (0, GRANTEE):
                            self.leak(f"message {m['id']} cites user 0's document")

    async def chats(self):
        r = await self.send("GET", "/api/chats")
        assert r.status_code == 200, r.text
        got = {c["id"] for c in r.json()["chats"]}
        mine = {c for c, owner in self.w.chats.items() if owner == self.u}
        foreign = {c for c in got if self.w.chats.get(c, self.u) != self.u}
        if foreign:
            self.leak(f"chat list shows other users' chats {foreign}")
        if mine - got:
            self.leak(f"lost: chat list misses {mine - got}")

    async def corrections(self):
        r = await self.send("GET", "/api/corrections")
        assert r.status_code == 200, r.text
        got = {c["id"] for c in r.json()["corrections"]}
        mine = {c for c, owner in self.w.corrections.items() if owner == self.u}
        if got - mine:
            self.leak(f"correction list shows others' corrections {got - mine}")
        if mine - got:
            self.leak(f"lost: correction list misses {mine - got}")
        self.no_hidden_text("corrections", r.json())

    async def delete_correction(self, correction_id: str):
        owner = self.w.corrections[correction_id]
        if owner == self.u:
            return  # only other users' corrections are attacked (own ones must stay)
        r = await self.send("DELETE", f"/api/corrections/{correction_id}")
        if r.status_code != 404:
            self.leak(f"deleting user {owner}'s correction -> {r.status_code}")

    async def usage(self):
        r = await self.send("GET", "/api/usage")
        assert r.status_code == 200, r.text
        got = r.json()["usage"]["chat_messages"]
        if got != self.w.turns[self.u]:
            self.leak(f"usage counts {got} turns, the user asked {self.w.turns[self.u]}")

    async def ask(self, question: str, book: Doc | None):
        payload: dict = {"question": question}
        if book is not None:
            payload["book_id"] = book.id
        r = await self.send("POST", "/api/ask", json=payload)
        if book is not None and book.id not in self.visible:
            if r.status_code != 404:
                self.leak(f"ask in hidden book {book.id} -> {r.status_code}")
            return
        assert r.status_code == 200, r.text
        body = r.json()
        self.w.chats[body["chat_id"]] = self.u
        self.w.messages[body["message_id"]] = self.u
        self.w.turns[self.u] += 1
        self.answer_citations("ask", body, question)


# --- the property --------------------------------------------------------------------------

ROUTES = [
    "search",
    "search",
    "search",
    "search",
    "chunk",
    "chunk",
    "documents",
    "document",
    "chat",
    "chats",
    "corrections",
    "delete_correction",
    "usage",
    "ask",
]

actions = st.fixed_dictionaries(
    {
        "user": st.integers(0, USERS - 1),
        "route": st.sampled_from(ROUTES),
        "doc": st.integers(0, USERS * DOCS_PER_USER - 1),
        "other_doc": st.integers(0, USERS * DOCS_PER_USER - 1),
        "index": st.integers(0, 50),
        "mode": st.sampled_from(["hybrid", "dense", "bm25"]),
        "corpus": st.sampled_from([None, "default", "notes", "nowhere"]),
        "ids": st.sampled_from([None, "target", "target+other", "empty"]),
        "query": st.sampled_from(["common", "own marker", "target marker", "question"]),
        "flag": st.booleans(),
        "flag2": st.booleans(),
    }
)


async def run_action(w: World, client: httpx.AsyncClient, a: dict, phase: str) -> None:
    check = Checker(w, client, a["user"], phase)
    target, other = w.docs[a["doc"]], w.docs[a["other_doc"]]
    own = [d for d in w.docs if d.owner == a["user"]]
    query = {
        "common": COMMON[a["index"] % len(COMMON)],
        "own marker": f"what is {own[a['index'] % len(own)].marker}?",
        "target marker": f"Where is {target.marker} written? {COMMON[0]}",
        "question": COMMON_QUESTIONS[a["index"] % len(COMMON_QUESTIONS)],
    }[a["query"]]
    route = a["route"]
    if route == "search":
        ids = {
            None: None,
            "target": [target.id],
            "target+other": [target.id, other.id],
            "empty": [],
        }[a["ids"]]
        await check.search(query, a["mode"], a["corpus"], ids)
    elif route == "chunk":
        await check.chunk(target, a["index"], a["flag"], a["flag2"])
    elif route == "documents":
        await check.documents()
    elif route == "document":
        await check.document(target)
    elif route == "chat":
        chats = sorted(w.chats)
        await check.chat(chats[(a["index"] * 7 + a["doc"]) % len(chats)], a["flag"])
    elif route == "chats":
        await check.chats()
    elif route == "corrections":
        await check.corrections()
    elif route == "delete_correction":
        ids = sorted(w.corrections)
        await check.delete_correction(ids[(a["index"] + a["doc"]) % len(ids)])
    elif route == "usage":
        await check.usage()
    elif route == "ask":
        await check.ask(query, target if a["flag"] else None)


PROPERTY = settings(
    max_examples=150,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@PROPERTY
@given(steps=st.lists(actions, min_size=3, max_size=6))
async def test_no_leak_while_shared(world, client, steps):
    assert world.shared
    for a in steps:
        await run_action(world, client, a, "shared")
    assert not world.leaks, "\n".join(world.leaks[:20])


async def test_revoke_hides_the_shared_document(world, client):
    """The grantee sees the shared document before the revoke and nothing of it after."""
    doc = world.docs[SHARED_DOC]
    b = world.headers[GRANTEE]
    assert (await client.get(f"/api/documents/{doc.id}", headers=b)).status_code == 200
    for mode in ("hybrid", "dense", "bm25"):
        r = await client.post("/api/search", json={"query": doc.marker, "mode": mode}, headers=b)
        assert doc.id in {c["documentId"] for c in r.json()["citations"]}, (mode, r.text)
    r = await client.delete(
        f"/api/documents/{doc.id}/shares/{world.names[GRANTEE]}", headers=world.headers[0]
    )
    assert r.status_code == 204, r.text
    world.shared = False
    assert (await client.get(f"/api/documents/{doc.id}", headers=b)).status_code == 404
    for mode in ("hybrid", "dense", "bm25"):
        r = await client.post(
            "/api/search",
            json={"query": doc.marker, "mode": mode, "document_ids": [doc.id]},
            headers=b,
        )
        assert r.status_code == 200 and r.json()["citations"] == [], r.text
    for chunk in doc.chunks:
        assert (await client.get(f"/api/chunks/{chunk}", headers=b)).status_code == 404
    # the owner still has everything
    r = await client.get(f"/api/documents/{doc.id}", headers=world.headers[0])
    assert r.status_code == 200 and r.json()["document"]["chunk_count"] == len(doc.chunks)


@PROPERTY
@given(steps=st.lists(actions, min_size=3, max_size=6))
async def test_no_leak_after_revoke(world, client, steps):
    if world.shared:
        pytest.skip("needs test_revoke_hides_the_shared_document first")
    for a in steps:
        await run_action(world, client, a, "revoked")
    assert not world.leaks, "\n".join(world.leaks[:20])


async def test_requests_tried_and_leaks_found(world):
    tried = sum(world.requests.values())
    print(
        f"\nisolation: {tried} requests tried {world.requests}, {world.checked} returned "
        f"objects checked, {len(world.leaks)} leaks found"
    )
    if set(world.requests) != {"shared", "revoked"}:
        pytest.skip("run the whole file to count both phases")
    assert all(n >= PHASE_MIN_REQUESTS for n in world.requests.values()), world.requests
    assert tried >= TOTAL_MIN_REQUESTS and world.checked > 0
    assert world.leaks == []
