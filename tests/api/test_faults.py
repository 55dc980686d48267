"""Faults: nothing lost, nothing half-saved.

a. the ingesting process is SIGKILLed mid-ingestion (while embedding, and as the store
   transaction starts): the database holds the whole document or none of it, and a re-run
   ingests it completely (summary resume after SIGKILL: tests/integration/test_summaries.py,
   ``test_summaries_resume_after_the_process_is_killed``);
b. the chat model fails mid-turn (raises after a few streamed tokens, or times out): the user
   gets ``502 answer_failed`` (or an SSE ``error`` event); the chat keeps the question with
   that error and nothing else (no answer, no usage); a model that hangs ends the turn at
   ``chat_timeout_seconds`` with ``504 model_timeout``, keeping only the question too;
c. the embedder fails during a search, an ask or an ingestion: a clear error
   (``503 embedder_unavailable``, a failed job, a CLI error line), nothing saved;
d. every database connection is dropped between requests: the next requests succeed
   (a real server restart: tests/e2e/test_db_restart.py).
"""

from __future__ import annotations

import asyncio
import signal
import sys
import textwrap
import time
import uuid

import httpx
import psycopg
import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from sqlalchemy import text

from tests.support.fakes import answer_with
from tests.support.paths import ALICE, ROOT
from tests.support.programs import program_env, sse_events

FAULTS: list[str] = []  # every fault injected (reported by the last test)
DOC_TEXT = (
    "The cartographer Ottoline maps the salt marshes of Wendle every spring. She counts "
    "forty-one tidal creeks and names each after a migrating bird.\n\n"
    "Her assistant Peregrine carries the theodolite and a flask of nettle tea across the "
    "mudflats at low tide."
)
QUESTION = "How many tidal creeks does Ottoline count in the salt marshes?"


@pytest.fixture
async def client(services):
    from api.app import app

    # like a real server: an unhandled error is answered (500), not raised into the test
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://test", timeout=120) as c:
        yield c


@pytest.fixture(scope="module", autouse=True)
async def _close_checkpointer(services):
    yield
    from graphs.checkpoint import close_checkpointer

    await close_checkpointer()


@pytest.fixture
async def reader(services):
    """A user with a token and one small document: ``(user, headers, document_id)``."""
    from agent.ingest.pipeline import ingest_bytes
    from agent.library.accounts import add_user

    user, token = await add_user(services, f"fault-{uuid.uuid4().hex[:6]}")
    doc = await ingest_bytes(services, user.id, DOC_TEXT.encode(), "marsh.txt")
    return user, {"Authorization": f"Bearer {token}"}, doc.document_id


async def _scalar(services, sql: str, **params):
    async with services.engine.connect() as conn:
        return (await conn.execute(text(sql), params)).scalar_one()


async def _saved_turns(services, user_id) -> dict:
    """What a chat turn could have left behind for ``user_id``."""
    return {
        "chats": await _scalar(
            services, "SELECT count(*) FROM chats WHERE user_id = :u", u=user_id
        ),
        "user messages": await _scalar(
            services,
            "SELECT count(*) FROM chat_messages WHERE user_id = :u AND role = 'user'",
            u=user_id,
        ),
        "assistant messages": await _scalar(
            services,
            "SELECT count(*) FROM chat_messages WHERE user_id = :u AND role = 'assistant'",
            u=user_id,
        ),
        "usage turns": await _scalar(
            services,
            "SELECT coalesce(sum(chat_messages), 0) FROM usage_monthly WHERE user_id = :u",
            u=user_id,
        ),
        "usage tokens": await _scalar(
            services,
            "SELECT coalesce(sum(tokens_used), 0) FROM usage_monthly WHERE user_id = :u",
            u=user_id,
        ),
    }


# --- a. SIGKILL during ingestion -----------------------------------------------------------

INGEST = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path

    from agent.library.accounts import resolve_user
    from agent.ingest.pipeline import ingest_file
    from agent.services import get_services

    def progress(stage, done, total):
        print(stage, done, total, flush=True)

    async def main():
        services = await get_services()
        user = await resolve_user(services, sys.argv[1])
        await ingest_file(services, user.id, Path(sys.argv[2]), progress=progress)
        print("finished", flush=True)

    asyncio.run(main())
    """
)


async def _stored(services, user_id) -> dict:
    """Everything an ingestion writes, for the user's documents."""
    docs = "SELECT id FROM documents WHERE user_id = :u"
    return {
        "documents": await _scalar(services, f"SELECT count(*) FROM ({docs}) d", u=user_id),
        "child chunks": await _scalar(
            services, f"SELECT count(*) FROM child_chunks WHERE document_id IN ({docs})", u=user_id
        ),
        "parent chunks": await _scalar(
            services, f"SELECT count(*) FROM parent_chunks WHERE document_id IN ({docs})", u=user_id
        ),
        "keyword terms": await _scalar(
            services, f"SELECT count(*) FROM keyword_terms WHERE document_id IN ({docs})", u=user_id
        ),
        "postings": await _scalar(
            services,
            f"SELECT count(*) FROM keyword_postings WHERE document_id IN ({docs})",
            u=user_id,
        ),
        "documents counted": await _scalar(
            services,
            "SELECT coalesce(sum(documents_ingested), 0) FROM usage_monthly WHERE user_id = :u",
            u=user_id,
        ),
    }


# the embed kill comes at the first batch's progress line and the store kill after a whole
# embedding: the shorter book keeps both quick (the re-ingest reads it all)
@pytest.mark.parametrize("kill_at", ["embed", "store"])
async def test_sigkill_during_ingestion_leaves_all_or_nothing(services, new_user, kill_at):
    from agent.ingest.pipeline import ingest_file

    book = ALICE

    user = await new_user("killed")
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        INGEST,
        user.name,
        str(book),
        cwd=ROOT,
        env=program_env(),
        stdout=asyncio.subprocess.PIPE,
    )
    seen: list[str] = []
    try:
        async with asyncio.timeout(300):
            while line := (await child.stdout.readline()).decode():
                seen.append(line.strip())
                if line.startswith(kill_at):
                    child.send_signal(signal.SIGKILL)
                    break
    finally:
        if child.returncode is None:
            child.kill()
        await child.wait()
    assert child.returncode == -signal.SIGKILL, seen
    assert "finished" not in seen and any(s.startswith(kill_at) for s in seen), seen

    after_kill = await _stored(services, user.id)
    FAULTS.append(
        f"SIGKILL while ingesting {book.name} ({kill_at}): "
        f"{'whole document' if after_kill['documents'] else 'nothing'} stored"
    )
    orphans = await _scalar(
        services,
        "SELECT (SELECT count(*) FROM child_chunks c WHERE NOT EXISTS "
        "(SELECT 1 FROM documents d WHERE d.id = c.document_id)) + "
        "(SELECT count(*) FROM keyword_postings p WHERE NOT EXISTS "
        "(SELECT 1 FROM documents d WHERE d.id = p.document_id))",
    )
    assert orphans == 0
    result = await ingest_file(services, user.id, book)
    complete = await _stored(services, user.id)
    assert complete["documents"] == 1 and complete["documents counted"] == 1, complete
    assert complete["child chunks"] == result.chunks > 50
    assert complete["parent chunks"] > 0 and complete["keyword terms"] > 0
    assert complete["postings"] > 0
    if after_kill["documents"]:  # the kill came after the commit: the whole document
        assert after_kill == complete and result.status == "duplicate", (after_kill, result)
    else:  # nothing at all
        assert set(after_kill.values()) == {0}, after_kill
        assert result.status == "ingested"
    assert (
        await _scalar(
            services,
            "SELECT count(*) FROM child_chunks c JOIN documents d ON d.id = c.document_id "
            "WHERE d.user_id = :u AND c.embedding IS NULL",
            u=user.id,
        )
        == 0
    )


# --- b. the chat model fails mid-turn ------------------------------------------------------


class FailingModel(BaseChatModel):
    """Streams a few tokens, then raises ``error`` (a provider error or a timeout)."""

    error: str = "boom"
    tokens: int = 3
    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "failing-fake"

    def _fail(self) -> Exception:
        if self.error == "timeout":
            return httpx.ReadTimeout("the model did not answer in time")
        return RuntimeError("the model broke mid-answer")

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        raise self._fail()

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        async for _ in self._astream(messages, stop, run_manager, **kwargs):
            pass
        return ChatResult(generations=[ChatGeneration(message=AIMessage(""))])  # unreachable

    async def _astream(self, messages, stop=None, run_manager=None, **kwargs):
        self.calls += 1
        for i in range(self.tokens):
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=f"Ottoline{i} "))
            if run_manager:
                await run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk
            await asyncio.sleep(0)
        raise self._fail()


@pytest.fixture
def failing_model(monkeypatch):
    return answer_with(monkeypatch, FailingModel())


@pytest.mark.parametrize("error", ["boom", "timeout"])
async def test_chat_model_failing_mid_turn_keeps_only_the_question(
    services, client, reader, failing_model, error
):
    user, headers, _ = reader
    failing_model.error = error
    before = await _saved_turns(services, user.id)

    r = await client.post("/api/ask", json={"question": QUESTION}, headers=headers)
    assert r.status_code == 502, r.text
    assert r.json()["error"]["code"] == "answer_failed" and r.json()["error"]["message"]
    FAULTS.append(f"chat model {error} (POST /api/ask)")

    r = await client.post("/api/ask/stream", json={"question": QUESTION}, headers=headers)
    events = sse_events(r.text)
    names = [name for name, _ in events]
    assert names[-1] == "error" and "done" not in names and "usage" not in names, events
    assert events[-1][1]["code"] == "answer_failed" and events[-1][1]["message"]
    assert failing_model.calls == 2  # the model really was reached (and failed) both times
    FAULTS.append(f"chat model {error} (POST /api/ask/stream)")

    # in an existing chat: the failed turn leaves its question with the error, nothing else
    chat = (await client.post("/api/chats", json={}, headers=headers)).json()["chat"]["id"]
    r = await client.post(f"/api/chats/{chat}/ask", json={"question": QUESTION}, headers=headers)
    assert r.status_code == 502 and r.json()["error"]["code"] == "answer_failed", r.text
    FAULTS.append(f"chat model {error} (POST /api/chats/{{id}}/ask)")
    r = await client.get(f"/api/chats/{chat}/messages", headers=headers)
    assert r.status_code == 200, r.text
    assert [(m["role"], m["content"], m["error"]["code"]) for m in r.json()["messages"]] == [
        ("user", QUESTION, "answer_failed")
    ]

    after = await _saved_turns(services, user.id)
    expected = {"chats": 3, "user messages": 3}  # the two new chats and this one
    assert after == {**before, **{k: before[k] + n for k, n in expected.items()}}, (before, after)
    usage = (await client.get("/api/usage", headers=headers)).json()["usage"]
    assert usage["chat_messages"] == before["usage turns"] == 0


class HangingModel(BaseChatModel):
    """Streams one token, then never finishes (a model server that stopped answering)."""

    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "hanging-fake"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        raise NotImplementedError("async only")

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        await asyncio.sleep(3600)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(""))])  # unreachable

    async def _astream(self, messages, stop=None, run_manager=None, **kwargs):
        self.calls += 1
        chunk = ChatGenerationChunk(message=AIMessageChunk(content="Ottoline "))
        if run_manager:
            await run_manager.on_llm_new_token(chunk.text, chunk=chunk)
        yield chunk
        await asyncio.sleep(3600)


async def test_a_hanging_chat_model_times_out_and_keeps_only_the_question(
    services, client, reader, monkeypatch
):
    user, headers, _ = reader
    model = answer_with(monkeypatch, HangingModel())
    monkeypatch.setattr(services.settings, "chat_timeout_seconds", 1.5)
    before = await _saved_turns(services, user.id)

    started = time.monotonic()
    r = await client.post("/api/ask", json={"question": QUESTION}, headers=headers)
    seconds = time.monotonic() - started
    assert r.status_code == 504, r.text
    assert r.json()["error"]["code"] == "model_timeout", r.text
    assert "1.5 seconds" in r.json()["error"]["message"], r.text
    assert seconds < 15, seconds  # ended by the limit, not by the model
    FAULTS.append(f"chat model hangs (POST /api/ask) -> 504 after {seconds:.1f} s")

    r = await client.post("/api/ask/stream", json={"question": QUESTION}, headers=headers)
    events = sse_events(r.text)
    names = [name for name, _ in events]
    assert names[0] == "token" and names[-1] == "error", events  # it had started streaming
    assert "done" not in names and "usage" not in names, events
    assert events[-1][1]["code"] == "model_timeout" and events[-1][1]["message"]
    FAULTS.append("chat model hangs (POST /api/ask/stream) -> error event model_timeout")

    chat = (await client.post("/api/chats", json={}, headers=headers)).json()["chat"]["id"]
    r = await client.post(f"/api/chats/{chat}/ask", json={"question": QUESTION}, headers=headers)
    assert r.status_code == 504 and r.json()["error"]["code"] == "model_timeout", r.text
    r = await client.get(f"/api/chats/{chat}/messages", headers=headers)
    assert r.status_code == 200, r.text
    [kept] = r.json()["messages"]
    assert kept["role"] == "user" and kept["error"]["code"] == "model_timeout", kept
    assert "1.5 seconds" in kept["error"]["message"]
    assert model.calls == 3

    after = await _saved_turns(services, user.id)
    expected = {"chats": 3, "user messages": 3}  # each cut-off question kept, nothing counted
    assert after == {**before, **{k: before[k] + n for k, n in expected.items()}}, (before, after)

    monkeypatch.undo()  # a model that answers: the same chat works, and keeps this turn whole
    r = await client.post(f"/api/chats/{chat}/ask", json={"question": QUESTION}, headers=headers)
    assert r.status_code == 200 and r.json()["citations"], r.text
    r = await client.get(f"/api/chats/{chat}/messages", headers=headers)
    assert [(m["role"], bool(m["error"])) for m in r.json()["messages"]] == [
        ("user", True),
        ("user", False),
        ("assistant", False),
    ], r.text
    assert (await _saved_turns(services, user.id))["usage turns"] == 1


# --- c. the embedder fails -----------------------------------------------------------------


async def test_embedder_failing_during_search_and_ask(services, client, reader, monkeypatch):
    user, headers, doc = reader
    before = await _saved_turns(services, user.id)
    r = await client.post(
        "/api/search", json={"query": "tidal creeks", "mode": "bm25"}, headers=headers
    )
    assert r.status_code == 200 and r.json()["citations"], r.text

    embedder_type = type(services.embeddings.embedder)

    def broken(self, *args, **kwargs):
        raise RuntimeError("the embedder is down")

    for name in ("embed_query", "embed_documents"):
        monkeypatch.setattr(embedder_type, name, broken)

    for mode in ("hybrid", "dense"):
        query = f"tidal creeks of Wendle {uuid.uuid4().hex[:6]}"  # never cached
        r = await client.post("/api/search", json={"query": query, "mode": mode}, headers=headers)
        FAULTS.append(f"embedder down (POST /api/search {mode}) -> {r.status_code}")
        if mode == "hybrid":  # degrades to its keyword half: still only the user's text
            assert r.status_code == 200, r.text
            assert {c["documentId"] for c in r.json()["citations"]} == {str(doc)}, r.text
        else:  # dense search cannot run without vectors: a clear 503
            assert r.status_code == 503, r.text
            assert r.json()["error"]["code"] == "embedder_unavailable"
            assert "Traceback" not in r.text and "embedder is down" not in r.text

    r = await client.post(
        "/api/ask", json={"question": f"{QUESTION} ({uuid.uuid4().hex[:6]})"}, headers=headers
    )
    FAULTS.append(f"embedder down (POST /api/ask) -> {r.status_code}")
    assert r.status_code == 200, r.text  # answered from keyword search, and saved whole
    after = await _saved_turns(services, user.id)
    assert after["user messages"] == after["assistant messages"] == after["usage turns"] == 1
    assert before["user messages"] == 0

    r = await client.post(
        "/api/documents/text",
        json={"title": "Broken", "text": "Nothing can embed this."},
        headers=headers,
    )
    FAULTS.append(f"embedder down (POST /api/documents/text) -> {r.status_code}")
    assert r.status_code == 503 and r.json()["error"]["code"] == "embedder_unavailable", r.text
    assert (
        await _scalar(services, "SELECT count(*) FROM documents WHERE user_id = :u", u=user.id) == 1
    )

    monkeypatch.undo()  # the embedder is back: everything works again, nothing was lost
    r = await client.post(
        "/api/search", json={"query": "tidal creeks", "mode": "dense"}, headers=headers
    )
    assert r.status_code == 200 and str(doc) in {c["documentId"] for c in r.json()["citations"]}


def _break_embedder(services, monkeypatch) -> None:
    def broken(self, *args, **kwargs):
        raise RuntimeError("the embedder is down")

    for name in ("embed_query", "embed_documents"):
        monkeypatch.setattr(type(services.embeddings.embedder), name, broken)


async def test_ingesting_while_the_embedder_is_down_stores_nothing(
    services, client, reader, monkeypatch
):
    from agent.ingest.jobs import wait_for_jobs

    user, headers, _ = reader
    before = await _stored(services, user.id)
    assert before["documents"] == 1
    _break_embedder(services, monkeypatch)
    upload = {"file": ("heron.txt", b"The grey heron waits in the reeds of Wendle.\n" * 40)}

    r = await client.post("/api/documents", files=upload, headers=headers)  # inline (201 path)
    FAULTS.append(f"embedder down (POST /api/documents) -> {r.status_code}")
    assert r.status_code == 503, r.text
    assert r.json()["error"]["code"] == "embedder_unavailable"
    assert "could not be indexed" in r.json()["error"]["message"]
    assert "embedder is down" not in r.text and "Traceback" not in r.text

    monkeypatch.setattr(services.settings, "api_sync_ingest_bytes", 100)  # now as a job
    r = await client.post("/api/documents", files=upload, headers=headers)
    assert r.status_code == 202, r.text
    job_id = r.json()["job"]["id"]
    await wait_for_jobs(timeout=60)
    job = (await client.get(f"/api/jobs/{job_id}", headers=headers)).json()["job"]
    FAULTS.append(f"embedder down (upload job) -> job {job['status']} {job['error']['code']}")
    assert job["status"] == "failed" and job["document_id"] is None, job
    assert job["error"]["code"] == "embedder_unavailable", job
    assert "could not be indexed" in job["error"]["message"], job

    assert await _stored(services, user.id) == before  # not a row more: all or nothing
    assert (
        await _scalar(
            services,
            "SELECT count(*) FROM ingest_jobs WHERE user_id = :u AND status IN "
            "('queued', 'running')",
            u=user.id,
        )
        == 0
    )

    monkeypatch.undo()  # the embedder is back: the same upload is ingested whole
    r = await client.post("/api/documents", files=upload, headers=headers)
    assert r.status_code == 201 and r.json()["status"] == "ingested", r.text
    assert (await _stored(services, user.id))["documents"] == 2


CLI_EMBEDDER_DOWN = textwrap.dedent(
    """
    import sys
    from agent.local_models import LocalMiniLMEmbeddings

    def broken(self, *args, **kwargs):
        raise RuntimeError("the embedder is down")

    LocalMiniLMEmbeddings.embed_documents = broken
    from api.cli import app

    app(sys.argv[1:], prog_name="quire")
    """
)


async def test_quire_ingest_while_the_embedder_is_down_prints_an_error_line(
    services, new_user, tmp_path
):
    user = await new_user("cli-embed")
    note = tmp_path / "heron.txt"
    note.write_text("The grey heron waits in the reeds of Wendle.\n" * 40)
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        CLI_EMBEDDER_DOWN,
        "ingest",
        str(note),
        "--user",
        user.name,
        cwd=ROOT,
        env=program_env(COLUMNS="200"),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(child.communicate(), timeout=120)
    stderr = " ".join(err.decode().split())
    FAULTS.append(f"embedder down (quire ingest) -> exit {child.returncode}")
    assert child.returncode == 1, (out, err)
    assert "error: heron.txt: The embedding model is not available" in stderr, stderr
    assert "Traceback" not in stderr and "embedder is down" not in stderr, stderr
    stored = await _stored(services, user.id)
    assert set(stored.values()) == {0}, stored


# --- d. the database drops every connection ------------------------------------------------


async def _drop_connections(services) -> int:
    with psycopg.connect(services.urls.libpq, autocommit=True) as conn:
        return conn.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone()[0]


async def test_dropped_database_connections_are_survived(services, client, reader):
    user, headers, doc = reader
    r = await client.post("/api/ask", json={"question": QUESTION}, headers=headers)
    assert r.status_code == 200, r.text  # the engine pool and the checkpointer are open now
    chat = r.json()["chat_id"]

    for request in (
        lambda: client.get("/api/documents", headers=headers),
        lambda: client.post("/api/search", json={"query": "tidal creeks"}, headers=headers),
        lambda: client.get(f"/api/chats/{chat}/messages", headers=headers),
        lambda: client.post(f"/api/chats/{chat}/ask", json={"question": QUESTION}, headers=headers),
        lambda: client.post("/api/ask", json={"question": QUESTION}, headers=headers),
    ):
        dropped = await _drop_connections(services)
        assert dropped >= 1
        FAULTS.append(f"{dropped} database connections terminated")
        r = await request()
        assert r.status_code == 200, r.text

    r = await client.get(f"/api/chats/{chat}/messages", headers=headers)
    roles = [m["role"] for m in r.json()["messages"]]
    assert roles == ["user", "assistant", "user", "assistant"], roles
    saved = await _saved_turns(services, user.id)
    assert saved["user messages"] == saved["assistant messages"] == saved["usage turns"] == 3


def test_faults_injected_and_data_lost():
    print(f"\nfaults: {len(FAULTS)} injected, 0 data lost (every test above checks its data)")
    for fault in FAULTS:
        print(f"  - {fault}")
