"""The background summary worker of a server process (API app, LangGraph server).

It summarizes every document whose summaries are pending or were interrupted (a killed
process leaves them ``running``), one at a time, woken by new ingestions and otherwise
polling. The model is shared with chat under llama.cpp's generation lock, so chat turns
interleave with summary steps instead of waiting for a whole book.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid

from agent.chat.overview import warm_summary
from agent.db import summaries as store
from agent.services import Services
from agent.summaries.builder import NothingToSummarize, SummaryBusy, summarize_document

logger = logging.getLogger(__name__)


class SummaryWorker:
    """Runs :func:`summarize_document` for pending documents until stopped."""

    def __init__(self, services: Services, poll_seconds: float = 30.0) -> None:
        self.services = services
        self.poll_seconds = poll_seconds
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None

    def wake(self) -> None:
        """Look for work now (called after an ingestion)."""
        self._wake.set()

    async def run_once(self) -> int:
        """Summarize every document waiting now; returns how many were completed."""
        async with self.services.engine.connect() as conn:
            waiting = await store.documents_needing_summaries(conn)
        return sum([await self.summarize(document_id) for document_id in waiting])

    async def summarize(self, document_id: uuid.UUID) -> bool:
        """Summarize one document, then warm the local model with its overview (so asking
        for it reads only the request); whether its summaries were completed."""
        try:
            await summarize_document(self.services, document_id)
        except (SummaryBusy, NothingToSummarize):
            return False
        except Exception:  # recorded on the document as 'failed'; keep serving others
            logger.exception("summaries for document %s failed", document_id)
            return False
        await warm_summary(self.services, document_id)
        return True

    async def _loop(self) -> None:
        while True:
            self._wake.clear()
            try:
                await self.run_once()
            except Exception:  # e.g. the database restarting: try again on the next tick
                logger.exception("summary worker pass failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.poll_seconds)

    def start(self) -> None:
        """Start the loop as a task of the running event loop (idempotent)."""
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(
                self._loop(), name="quire-summaries"
            )

    async def stop(self) -> None:
        """Cancel the loop; an interrupted document stays ``running`` and resumes next time."""
        if self._task:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None


_workers: dict[int, SummaryWorker] = {}


def start_summary_worker(services: Services) -> SummaryWorker | None:
    """This event loop's worker, started if ``summaries_in_background`` is on."""
    if not services.settings.summaries_in_background:
        return None
    key = id(asyncio.get_running_loop())
    worker = _workers.get(key)
    if worker is None:
        worker = _workers[key] = SummaryWorker(services)
    worker.start()
    return worker


def wake_summary_worker() -> None:
    """Tell this event loop's worker, if it runs, that a document may need summaries."""
    with contextlib.suppress(RuntimeError):
        worker = _workers.get(id(asyncio.get_running_loop()))
        if worker:
            worker.wake()


async def stop_summary_worker() -> None:
    """Stop this event loop's worker, if any."""
    with contextlib.suppress(RuntimeError):
        worker = _workers.pop(id(asyncio.get_running_loop()), None)
        if worker:
            await worker.stop()
