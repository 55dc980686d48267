"""Ingesting what the HTTP API receives: uploaded bytes, a URL, pasted text, a transcript.

Each function ingests in one transaction (a failure stores nothing) and turns known bad
input into :class:`agent.refusals.Refused` with a stable code: ``empty``, ``unreadable``,
``unsupported_type``, ``invalid_source``, ``unsafe_url``, ``fetch_failed``.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from pathlib import PurePosixPath
from typing import TypeVar

from agent.config import Settings
from agent.ingest.fetch import check_url
from agent.ingest.pipeline import IngestResult, Progress, ingest_bytes
from agent.ingest.sources import ingest_text, ingest_transcript, ingest_url
from agent.refusals import Refused, refusal_for
from agent.services import Services
from agent.summaries.writers import clean_labels

T = TypeVar("T")

MAX_TAGS = 12


def parse_tags(raw: str | list[str] | None) -> list[str]:
    """Tags from a comma separated string or a list: lowercased, deduplicated, at most 12."""
    if not raw:
        return []
    joined = raw if isinstance(raw, str) else ", ".join(raw)
    return clean_labels(joined, limit=MAX_TAGS)


async def _refusing(run: Callable[[], Awaitable[T]]) -> T:
    """Await ``run()``, re-raising known bad-input errors as :class:`Refused`."""
    try:
        return await run()
    except Exception as exc:
        refusal = refusal_for(exc)
        if refusal is None:
            raise
        raise refusal from exc


def check_not_empty(data: bytes, filename: str) -> None:
    """Refuse an upload with no content (``empty``)."""
    if not data.strip():
        raise Refused("empty", f"{filename} is empty")


def check_size(settings: Settings, text: str) -> None:
    """Refuse text over the upload limit (``too_large``)."""
    if len(text.encode("utf-8")) > settings.api_max_upload_bytes:
        raise Refused(
            "too_large",
            f"the text is larger than the limit of {settings.api_max_upload_bytes:,} bytes",
        )


async def ingest_upload(
    services: Services,
    user_id: uuid.UUID,
    data: bytes,
    filename: str,
    *,
    title: str | None = None,
    tags: list[str] | None = None,
    corpus: str = "default",
    progress: Progress | None = None,
) -> IngestResult:
    """Parse and store an uploaded file (its extension gives the type)."""
    # the base name only, whichever separator a client used ("..\\..\\x.txt" is "x.txt")
    filename = PurePosixPath(filename.replace("\\", "/")).name
    check_not_empty(data, filename)
    return await _refusing(
        lambda: ingest_bytes(
            services,
            user_id,
            data,
            filename,
            title=title or None,
            corpus=corpus,
            tags=tags,
            progress=progress,
        )
    )


async def vet_url(url: str, settings: Settings) -> None:
    """Refuse a URL before queuing it: ``unsafe_url`` for targets the SSRF guard refuses,
    ``fetch_failed`` when its host does not resolve (within the URL time limit)."""
    if not (url or "").strip():
        raise Refused("invalid_source", "give the URL to ingest")
    try:
        async with asyncio.timeout(settings.url_timeout_seconds):
            await _refusing(lambda: check_url(url.strip(), settings))
    except TimeoutError:
        raise Refused("fetch_failed", f"could not resolve the host of {url}") from None


async def ingest_from_url(
    services: Services,
    user_id: uuid.UUID,
    url: str,
    *,
    title: str | None = None,
    tags: list[str] | None = None,
    corpus: str = "default",
    progress: Progress | None = None,
) -> IngestResult:
    """Fetch a page or file (SSRF-guarded, size- and time-limited) and store it; the URL is
    its source, so fetching it again after it changed replaces it."""

    return await _refusing(
        lambda: ingest_url(
            services,
            user_id,
            url,
            title=title or None,
            corpus=corpus,
            tags=tags,
            progress=progress,
        )
    )


async def ingest_pasted(
    services: Services,
    user_id: uuid.UUID,
    title: str,
    text: str,
    *,
    tags: list[str] | None = None,
    corpus: str = "default",
) -> IngestResult:
    """Store pasted text under ``title`` (Markdown headings become sections)."""
    if not (text or "").strip():
        raise Refused("empty", "the text is empty")
    check_size(services.settings, text)
    return await _refusing(
        lambda: ingest_text(services, user_id, text, title, corpus=corpus, tags=tags)
    )


async def ingest_transcript_text(
    services: Services,
    user_id: uuid.UUID,
    text: str,
    *,
    refined_text: str | None = None,
    title: str | None = None,
    tags: list[str] | None = None,
    echotag: str | None = None,
    corpus: str = "default",
) -> IngestResult:
    """Store a transcript (seed 002); without tags the labeling model proposes some."""
    if not (text or "").strip():
        raise Refused("empty", "the transcript is empty")
    check_size(services.settings, text + (refined_text or ""))
    return await _refusing(
        lambda: ingest_transcript(
            services,
            user_id,
            text,
            refined_text,
            tags=tags,
            echotag=echotag,
            title=title,
            corpus=corpus,
        )
    )
