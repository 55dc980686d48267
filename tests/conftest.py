"""Shared fixtures: a real embedded Postgres (pgvector) with a fresh database per session.

Environment is set before anything reads settings, so graph nodes, CLI subprocesses and
the LangGraph server started by tests all use the same throw-away database.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from tests.support.paths import ALICE, ROOT

TEST_DB = f"quire_test_{uuid.uuid4().hex[:8]}"
os.environ.setdefault("QUIRE_HOME", str(ROOT / ".quire" / "test"))
os.environ["QUIRE_DATABASE_NAME"] = TEST_DB
os.environ["QUIRE_CHAT_MODEL"] = "extractive"
# servers started by tests do not spend their first seconds warming the model's prompt cache
# (tests/e2e/test_local_model.py warms it on purpose)
os.environ.setdefault("QUIRE_LOCAL_CHAT_WARM_PROMPTS", "false")
os.environ.setdefault("LANGSMITH_TRACING", "false")


@pytest.fixture(scope="session")
def settings():
    from agent.config import get_settings

    return get_settings()


@pytest.fixture(scope="session")
async def services(settings):
    from agent.db.server import server_url
    from agent.services import close_services, get_services

    svc = await get_services()
    _remember_embeddings(svc.embeddings.embedder)
    yield svc
    await close_services()
    import psycopg
    from psycopg import sql

    from agent.db.server import with_database

    if not settings.database_url:
        admin = with_database(server_url(settings), "postgres").libpq
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(TEST_DB))
            )


def _remember_embeddings(embedder) -> None:
    """Embed each distinct text once per test session: the books are ingested by many tests
    (for users that must not see each other's data) and embedding them is most of the
    suite's time on 2 cores. The local embedder embeds texts one at a time, so a remembered
    vector is exactly the one it would compute again."""
    embed_one = getattr(embedder, "_embed_one", None)
    if embed_one is None:  # a hosted embedder: nothing to spare
        return
    import threading

    import numpy as np

    remembered: dict[str, np.ndarray] = {}  # float32, as the embedder makes them
    lock = threading.Lock()

    def embed_once(text: str, session=None) -> list[float]:
        with lock:
            vector = remembered.get(text)
        if vector is None:
            vector = np.asarray(embed_one(text, session), dtype=np.float32)
            with lock:
                remembered[text] = vector
        return vector.tolist()

    embedder._embed_one = embed_once


@pytest.fixture(scope="module", autouse=True)
async def _no_background_work_after_the_module():
    """Cancel what a module's chat turns left running in the background (their chat
    summaries on the local model): a test that needs it waits for it itself, and otherwise
    it would take the model from the next modules' tests, and their timings with it."""
    yield
    from tests.support.background import cancel_background

    await cancel_background()


@pytest.fixture
async def client(services):
    """An httpx client on the real FastAPI app, in process."""
    import httpx

    from api.app import app

    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test", timeout=120) as c:
        yield c


@pytest.fixture(scope="module")
async def close_checkpointer_after(services):
    """Close the API's Postgres checkpointer when the module is done (its pool is per loop)."""
    yield
    from graphs.checkpoint import close_checkpointer

    await close_checkpointer()


@pytest.fixture
async def new_user(services):
    """A fresh user (unique name) for tests that must not see each other's data."""
    from agent.library.accounts import resolve_user

    async def make(prefix: str = "user"):
        return await resolve_user(services, f"{prefix}-{uuid.uuid4().hex[:6]}")

    return make


@pytest.fixture(scope="session")
async def alice_reader(services):
    """A user who has ingested Alice in Wonderland (shared by read-only tests)."""
    from agent.ingest.pipeline import ingest_file
    from agent.library.accounts import resolve_user

    user = await resolve_user(services, "alice-reader")
    result = await ingest_file(services, user.id, ALICE)
    return user, result


@pytest.fixture(scope="module")
def api_server(tmp_path_factory):
    """Start ``uvicorn api.app:app`` subprocesses for this module: ``api_server(**env) ->
    (url, log path)``, with ``env`` over the test environment. All are stopped at the end."""
    from tests.support.programs import program_env, start_api, stop_process

    started = []

    def start(**env: str) -> tuple[str, Path]:
        log = tmp_path_factory.mktemp("api") / "uvicorn.log"
        proc, url = start_api(program_env(**env), log, timeout=120)
        started.append(proc)
        return url, log

    yield start
    for proc in started:
        stop_process(proc)


@pytest.fixture(scope="module")
def langgraph_server(tmp_path_factory):
    """``langgraph dev`` on a free loopback port for this module, on the test database: its URL."""
    from tests.support.programs import program_env, start_langgraph, stop_process

    proc, url = start_langgraph(program_env(), tmp_path_factory.mktemp("langgraph") / "server.log")
    yield url
    stop_process(proc)
