"""Ingest jobs (table ``ingest_jobs``): create, claim, report progress, finish, recover.

Every write is its own short statement; a job is claimed with a conditional update, so of
several processes that try to run the same queued job exactly one does.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection


@dataclass(frozen=True)
class JobRow:
    """An ingest job as its owner sees it (without the payload)."""

    id: uuid.UUID
    user_id: uuid.UUID
    kind: str
    status: str
    stage: str | None
    done: int
    total: int
    document_id: uuid.UUID | None
    error_code: str | None
    error_message: str | None
    attempts: int
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class JobWork:
    """What running a claimed job needs: its owner, options and uploaded bytes."""

    id: uuid.UUID
    user_id: uuid.UUID
    kind: str
    request: dict
    payload: bytes | None


_COLUMNS = (
    "id, user_id, kind, status, stage, done, total, document_id, error_code, error_message, "
    "attempts, created_at, updated_at"
)


async def create_job(
    conn: AsyncConnection,
    user_id: uuid.UUID,
    kind: str,
    request: dict,
    payload: bytes | None = None,
) -> JobRow:
    """Store a new ``queued`` job."""
    row = (
        await conn.execute(
            text(
                "INSERT INTO ingest_jobs (id, user_id, kind, request, payload) "
                f"VALUES (:id, :u, :k, CAST(:r AS jsonb), :p) RETURNING {_COLUMNS}"
            ),
            {"id": uuid.uuid4(), "u": user_id, "k": kind, "r": json.dumps(request), "p": payload},
        )
    ).one()
    return JobRow(**row._mapping)


async def get_job(conn: AsyncConnection, user_id: uuid.UUID, job_id: uuid.UUID) -> JobRow | None:
    """One of the user's jobs (another user's counts as missing)."""
    row = (
        await conn.execute(
            text(f"SELECT {_COLUMNS} FROM ingest_jobs WHERE id = :j AND user_id = :u"),
            {"j": job_id, "u": user_id},
        )
    ).first()
    return JobRow(**row._mapping) if row else None


async def claim_job(conn: AsyncConnection, job_id: uuid.UUID) -> JobWork | None:
    """Mark a ``queued`` job ``running`` and return its work; ``None`` if someone else has it."""
    row = (
        await conn.execute(
            text(
                "UPDATE ingest_jobs SET status = 'running', attempts = attempts + 1, "
                "stage = NULL, done = 0, total = 0, updated_at = now() "
                "WHERE id = :j AND status = 'queued' "
                "RETURNING id, user_id, kind, request, payload"
            ),
            {"j": job_id},
        )
    ).first()
    if row is None:
        return None
    return JobWork(row.id, row.user_id, row.kind, dict(row.request), row.payload)


async def record_progress(
    conn: AsyncConnection, job_id: uuid.UUID, stage: str | None, done: int, total: int
) -> None:
    """Store a running job's progress (and so its heartbeat)."""
    await conn.execute(
        text(
            "UPDATE ingest_jobs SET stage = coalesce(:s, stage), done = :d, total = :t, "
            "updated_at = now() WHERE id = :j AND status = 'running'"
        ),
        {"j": job_id, "s": stage, "d": done, "t": total},
    )


async def finish_job(
    conn: AsyncConnection,
    job_id: uuid.UUID,
    *,
    document_id: uuid.UUID | None = None,
    error_code: str | None = None,
    error_message: str | None = None,
    progress: tuple[str | None, int, int] | None = None,
) -> None:
    """End a job: ``done`` with its document, or ``failed`` with an error, with its last
    ``progress`` (stage, done, total); the payload is dropped."""
    stage, done, total = progress or (None, None, None)
    await conn.execute(
        text(
            "UPDATE ingest_jobs SET "
            "status = CASE WHEN CAST(:code AS text) IS NULL THEN 'done' ELSE 'failed' END, "
            "document_id = :doc, error_code = :code, error_message = :msg, payload = NULL, "
            "stage = coalesce(:stage, stage), done = coalesce(:done, done), "
            "total = coalesce(:total, total), updated_at = now() WHERE id = :j"
        ),
        {
            "j": job_id,
            "doc": document_id,
            "code": error_code,
            "msg": error_message,
            "stage": stage,
            "done": done,
            "total": total,
        },
    )


async def release_job(conn: AsyncConnection, job_id: uuid.UUID) -> None:
    """Put a running job back in the queue, not counting the run (its process is stopping)."""
    await conn.execute(
        text(
            "UPDATE ingest_jobs SET status = 'queued', attempts = greatest(attempts - 1, 0), "
            "updated_at = now() WHERE id = :j AND status = 'running'"
        ),
        {"j": job_id},
    )


async def requeue_stale(
    conn: AsyncConnection,
    stale_seconds: float,
    max_attempts: int,
    job_id: uuid.UUID | None = None,
) -> list[uuid.UUID]:
    """Deal with ``running`` jobs whose heartbeat stopped ``stale_seconds`` ago (their process
    died): those tried ``max_attempts`` times fail as ``interrupted``, the others are queued
    again. Only ``job_id`` if given. Returns the ids of the queued ones."""
    params = {"stale": stale_seconds, "max": max_attempts, "j": job_id}
    stale = (
        "status = 'running' AND updated_at < now() - make_interval(secs => :stale) "
        "AND (CAST(:j AS uuid) IS NULL OR id = CAST(:j AS uuid))"
    )
    await conn.execute(
        text(
            "UPDATE ingest_jobs SET status = 'failed', error_code = 'interrupted', "
            "error_message = 'The server stopped while ingesting this document; send it again.', "
            f"payload = NULL, updated_at = now() WHERE {stale} AND attempts >= :max"
        ),
        params,
    )
    rows = await conn.execute(
        text(
            "UPDATE ingest_jobs SET status = 'queued', updated_at = now() "
            f"WHERE {stale} AND attempts < :max RETURNING id"
        ),
        params,
    )
    return [r.id for r in rows]


async def queued_jobs(conn: AsyncConnection, limit: int = 100) -> list[uuid.UUID]:
    """Queued jobs, oldest first."""
    rows = await conn.execute(
        text("SELECT id FROM ingest_jobs WHERE status = 'queued' ORDER BY created_at LIMIT :n"),
        {"n": limit},
    )
    return [r.id for r in rows]
