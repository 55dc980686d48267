"""Ingest jobs of the HTTP API: large uploads and URLs ingested in the background.

A job is a row in ``ingest_jobs`` (so any API process can report on it) run by an asyncio
task in the process that accepted it, at most ``settings.api_ingest_concurrency`` at a
time. While it runs, its progress (``stage``, ``done``, ``total``) is written to the row,
at least every :data:`HEARTBEAT_SECONDS`; that write is its heartbeat.

A process that dies leaves its jobs ``queued`` or ``running``. :func:`recover_ingest_jobs`
(called when the API starts) runs queued jobs and gives running ones whose heartbeat
stopped one more try (then they fail as ``interrupted``); reading a job whose heartbeat
stopped does the same, so no job stays stuck even if no process restarts. Ingestion
itself is one transaction: an interrupted or failed job leaves no partial document.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy.exc import IntegrityError

from agent.db import jobs as store
from agent.db.jobs import JobRow, JobWork
from agent.ingest.document import Upload
from agent.ingest.intake import check_not_empty, ingest_from_url, ingest_upload, vet_url
from agent.ingest.pipeline import IngestResult, Progress
from agent.library.sharing import get_document
from agent.models import EmbedderUnavailable
from agent.refusals import Refused, refusal_for
from agent.services import Services

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 2
"""Runs a job gets in all: one more after its process died while running it."""
HEARTBEAT_SECONDS = 15.0

_tasks: dict[uuid.UUID, asyncio.Task] = {}
"""This process's job tasks by job id (one per job, kept until it ends)."""
_slots: dict[int, asyncio.Semaphore] = {}


def job_json(job: JobRow) -> dict:
    """The contract's ``Job`` object."""
    error = None
    if job.error_code:
        error = {"code": job.error_code, "message": job.error_message or job.error_code}
    return {
        "id": str(job.id),
        "kind": job.kind,
        "status": job.status,
        "stage": job.stage,
        "done": job.done,
        "total": job.total,
        "document_id": str(job.document_id) if job.document_id else None,
        "error": error,
        "created_at": job.created_at.isoformat(),
        "updated_at": job.updated_at.isoformat(),
    }


@dataclass(frozen=True)
class Accepted:
    """What an ingestion request became: a stored ``document`` (with the ingestion's
    ``status``: ingested, duplicate or replaced) or a queued ``job``."""

    document: dict | None = None
    status: str | None = None
    job: dict | None = None


async def _stored(services: Services, user_id: uuid.UUID, result: IngestResult) -> Accepted:
    document = await get_document(services, user_id, str(result.document_id))
    return Accepted(document=document, status=result.status)


async def accept_upload(
    services: Services,
    user_id: uuid.UUID,
    upload: Upload,
    *,
    title: str | None = None,
    tags: list[str] | None = None,
    corpus: str = "default",
) -> Accepted:
    """Ingest a small upload now; queue a job for one over ``settings.api_sync_ingest_bytes``."""
    check_not_empty(upload.data, upload.filename)
    if len(upload.data) <= services.settings.api_sync_ingest_bytes:
        result = await ingest_upload(
            services, user_id, upload.data, upload.filename, title=title, tags=tags, corpus=corpus
        )
        return await _stored(services, user_id, result)
    request = {"filename": upload.filename, "title": title, "tags": tags or [], "corpus": corpus}
    job = await submit(services, user_id, "upload", request, upload.data)
    return Accepted(job=job_json(job))


async def accept_url(
    services: Services,
    user_id: uuid.UUID,
    url: str,
    *,
    title: str | None = None,
    tags: list[str] | None = None,
    corpus: str = "default",
) -> Accepted:
    """Vet a URL now (``unsafe_url`` is refused at once) and queue a job that fetches it."""
    url = (url or "").strip()
    await vet_url(url, services.settings)
    request = {"url": url, "title": title, "tags": tags or [], "corpus": corpus}
    return Accepted(job=job_json(await submit(services, user_id, "url", request)))


async def submit(
    services: Services,
    user_id: uuid.UUID,
    kind: str,
    request: dict,
    payload: bytes | None = None,
) -> JobRow:
    """Store a queued job and start running it in this process."""
    async with services.engine.begin() as conn:
        job = await store.create_job(conn, user_id, kind, request, payload)
    schedule(services, job.id)
    return job


def schedule(services: Services, job_id: uuid.UUID) -> asyncio.Task:
    """Run the job in a background task of this process, unless one already does."""
    if job_id in _tasks:
        return _tasks[job_id]
    task = asyncio.get_running_loop().create_task(run_job(services, job_id))
    _tasks[job_id] = task
    task.add_done_callback(lambda done: _ended(job_id, done))
    return task


def _ended(job_id: uuid.UUID, task: asyncio.Task) -> None:
    _tasks.pop(job_id, None)
    if not task.cancelled() and task.exception() is not None:
        # e.g. the database was unreachable: the job stays open for a later recovery
        logger.error("ingest job %s stopped", job_id, exc_info=task.exception())


def _slot(services: Services) -> asyncio.Semaphore:
    loop_id = id(asyncio.get_running_loop())
    if loop_id not in _slots:
        _slots[loop_id] = asyncio.Semaphore(max(1, services.settings.api_ingest_concurrency))
    return _slots[loop_id]


class _Reporter:
    """Writes a running job's latest progress to its row: soon after each change, and at
    least every :data:`HEARTBEAT_SECONDS` (the heartbeat)."""

    def __init__(self, services: Services, job_id: uuid.UUID) -> None:
        self.services = services
        self.job_id = job_id
        self.state: tuple[str | None, int, int] = (None, 0, 0)
        self._changed = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._stopped = False

    def progress(self, stage: str, done: int, total: int) -> None:
        """The ingestion's :data:`Progress` callback."""
        self.state = (stage, done, total)
        self._changed.set()

    async def _loop(self) -> None:
        # the flag, not only the cancellation, ends the loop: on Python 3.11 a cancel that
        # races with the event being set can be swallowed
        while not self._stopped:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(HEARTBEAT_SECONDS):
                    await self._changed.wait()
            self._changed.clear()
            try:
                async with self.services.engine.begin() as conn:
                    await store.record_progress(conn, self.job_id, *self.state)
            except Exception:  # a missed update is not worth failing the ingestion for
                logger.warning("could not record progress of job %s", self.job_id, exc_info=True)

    def start(self) -> None:
        """Start writing progress."""
        self._task = asyncio.get_running_loop().create_task(self._loop())

    async def stop(self) -> None:
        """Stop writing progress (the final state is written by :func:`store.finish_job`)."""
        self._stopped = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None


async def _execute(services: Services, work: JobWork, progress: Progress) -> IngestResult:
    request = work.request
    options = {
        "title": request.get("title"),
        "tags": request.get("tags") or [],
        "corpus": request.get("corpus") or "default",
        "progress": progress,
    }
    if work.kind == "url":
        return await ingest_from_url(services, work.user_id, request["url"], **options)
    if work.payload is None:
        raise Refused("invalid_source", "the uploaded file is no longer available")
    return await ingest_upload(services, work.user_id, work.payload, request["filename"], **options)


async def run_job(services: Services, job_id: uuid.UUID) -> bool:
    """Run a queued job to ``done`` or ``failed``; ``False`` if another process took it.

    A job cancelled here (the server shutting down) is put back in the queue for the next
    start.
    """
    async with _slot(services):
        async with services.engine.begin() as conn:
            work = await store.claim_job(conn, job_id)
        if work is None:
            return False
        reporter = _Reporter(services, job_id)
        reporter.start()
        document_id = code = message = None
        try:
            document_id = (await _execute(services, work, reporter.progress)).document_id
        except asyncio.CancelledError:
            await reporter.stop()
            with contextlib.suppress(Exception):
                async with services.engine.begin() as conn:
                    await store.release_job(conn, job_id)
            raise
        except EmbedderUnavailable as exc:  # a fault, not bad input: fail with a clear reason
            logger.warning("ingest job %s: embedder unavailable: %r", job_id, exc.__cause__)
            code, message = "embedder_unavailable", str(exc)
        except Exception as exc:
            refusal = refusal_for(exc)
            if refusal is None:
                logger.exception("ingest job %s failed", job_id)
                code, message = "internal", "Ingestion failed unexpectedly; see the server log."
            else:
                code, message = refusal.code, refusal.message
        finally:
            await reporter.stop()
        finish = {"error_code": code, "error_message": message, "progress": reporter.state}
        try:
            async with services.engine.begin() as conn:
                await store.finish_job(conn, job_id, document_id=document_id, **finish)
        except IntegrityError:  # the document was deleted already: done, without it
            async with services.engine.begin() as conn:
                await store.finish_job(conn, job_id, **finish)
        return True


async def get_job(services: Services, user_id: uuid.UUID, job_id: str) -> dict:
    """One of the user's jobs as ``Job``; ``not_found`` for anyone else's.

    Asking keeps a job moving: a queued job no task of this process holds is started here
    (only one process will claim it), and a running job whose heartbeat stopped (its
    process died) is queued again and started, or failed if it already had its retry.
    """
    try:
        jid = uuid.UUID(job_id.strip())
    except ValueError:
        raise Refused("not_found", "No such job.") from None
    async with services.engine.connect() as conn:
        job = await store.get_job(conn, user_id, jid)
    if job is None:
        raise Refused("not_found", "No such job.")
    if job.status == "queued":
        schedule(services, jid)
    elif job.status == "running" and _silent_for(job) > _stale_seconds(services):
        async with services.engine.begin() as conn:
            requeued = await store.requeue_stale(
                conn, _stale_seconds(services), MAX_ATTEMPTS, job_id=jid
            )
            job = await store.get_job(conn, user_id, jid) or job
        if requeued:
            schedule(services, jid)
    return job_json(job)


def _stale_seconds(services: Services) -> float:
    """How long a running job may be silent before it counts as abandoned: the setting,
    but never less than a few heartbeats."""
    return max(float(services.settings.api_job_stale_seconds), 4 * HEARTBEAT_SECONDS)


def _silent_for(job: JobRow) -> float:
    """Seconds since the job's last heartbeat (the database re-checks with its own clock)."""
    return (datetime.now(UTC) - job.updated_at).total_seconds()


async def recover_ingest_jobs(services: Services) -> int:
    """Take over the jobs dead processes left behind; returns how many were started.

    For the API's startup (lifespan): running jobs whose heartbeat stopped are queued again
    (or failed after :data:`MAX_ATTEMPTS`), and every queued job is started here. A job a
    live process is about to run is claimed by only one of the two.
    """
    async with services.engine.begin() as conn:
        await store.requeue_stale(conn, _stale_seconds(services), MAX_ATTEMPTS)
        queued = await store.queued_jobs(conn)
    for job_id in queued:
        schedule(services, job_id)
    if queued:
        logger.info("resuming %d queued ingest job(s)", len(queued))
    return len(queued)


async def stop_ingest_jobs() -> None:
    """Cancel this process's running jobs (server shutdown): they go back to the queue."""
    tasks = list(_tasks.values())
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def wait_for_jobs(timeout: float | None = None) -> None:
    """Wait until this process's jobs have ended (tests, graceful shutdown)."""
    tasks = list(_tasks.values())
    if tasks:
        await asyncio.wait(tasks, timeout=timeout)
